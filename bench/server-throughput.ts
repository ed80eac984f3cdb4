/**
 * Requests per second of A2AServer against the `@a2a-js/sdk` Express server
 * (`jsonRpcHandler`) with an equivalent trivial executor, and of our FAILED
 * path against our COMPLETED path. Same SDK client and concurrency for all,
 * measured in one interleaved run.
 *
 *   npx tsx bench/server-throughput.ts
 *
 * Targets: ours / express >= 1.0; failed / completed time <= 1.2.
 */
import { AGENT_CARD_PATH, type AgentCard, Role, TaskState } from "@a2a-js/sdk"
import { type Client, ClientFactory, JsonRpcTransportFactory } from "@a2a-js/sdk/client"
import {
  AgentEvent,
  type AgentExecutor as SdkAgentExecutor,
  DefaultRequestHandler,
  InMemoryTaskStore
} from "@a2a-js/sdk/server"
import { agentCardHandler, jsonRpcHandler, UserBuilder } from "@a2a-js/sdk/server/express"
import { Effect, Exit, Logger, Scope } from "effect"
import express from "express"
import type { AddressInfo } from "node:net"
import * as A2AServer from "../src/A2AServer.js"
import * as AgentExecutor from "../src/AgentExecutor.js"
import { cardFor, sdkRequest } from "../test/fixtures/peers.js"
import { report } from "./report.js"

// tsx turns on source-map support, which makes every `error.stack` map each
// frame back to the TypeScript source: a cost of running through tsx, not of
// the server, which production runs as compiled JavaScript. The FAILED path
// reads one stack per request (the logged cause), so it is measured as it runs there.
process.setSourceMapsEnabled(false)

const CONCURRENCY = 16
const PER_ROUND = 300
// Load from elsewhere on a shared machine moves a round by several percent:
// enough rounds that it averages out of the totals.
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 30)

const trivialExecutor: SdkAgentExecutor = {
  execute: async (context, bus) => {
    bus.publish(AgentEvent.task({
      id: context.taskId,
      contextId: context.contextId,
      status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: new Date().toISOString() },
      artifacts: [],
      history: [context.userMessage],
      metadata: {}
    }))
    bus.publish(AgentEvent.statusUpdate({
      taskId: context.taskId,
      contextId: context.contextId,
      status: {
        state: TaskState.TASK_STATE_COMPLETED,
        message: {
          messageId: crypto.randomUUID(),
          contextId: context.contextId,
          taskId: context.taskId,
          role: Role.ROLE_AGENT,
          parts: [{ content: { $case: "text", value: "ok" }, metadata: {}, filename: "", mediaType: "text/plain" }],
          metadata: {},
          extensions: [],
          referenceTaskIds: []
        },
        timestamp: new Date().toISOString()
      },
      metadata: {}
    }))
    bus.finished()
  },
  cancelTask: async () => {}
}

const startExpress = async (): Promise<{ url: string; close: () => Promise<void> }> => {
  const app = express()
  const server = app.listen(0, "127.0.0.1")
  await new Promise<void>((resolve) => server.once("listening", () => resolve()))
  const port = (server.address() as AddressInfo).port
  const url = `http://127.0.0.1:${port}`
  const card: AgentCard = {
    ...cardFor(`${url}/a2a/jsonrpc`),
    name: "express",
    description: "bench",
    supportedInterfaces: ["1.0", "0.3"].map((protocolVersion) => ({
      url: `${url}/a2a/jsonrpc`,
      protocolBinding: "JSONRPC",
      tenant: "",
      protocolVersion
    }))
  }
  const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), trivialExecutor)
  app.use(`/${AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: handler, legacyCompat: { enabled: true } }))
  app.use("/a2a/jsonrpc", jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication, legacyCompat: { enabled: true } }))
  return { url, close: () => new Promise((resolve) => server.close(() => resolve())) }
}

const round = async (client: Client, text: string): Promise<number> => {
  let next = 0
  const start = performance.now()
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    while (next < PER_ROUND) {
      next++
      await client.sendMessage(sdkRequest(text))
    }
  }))
  return performance.now() - start
}

const main = async () => {
  const scope = Effect.runSync(Scope.make())
  // The FAILED path logs its cause like in production; the line is formatted and dropped.
  const quietLogger = Logger.replace(Logger.defaultLogger, Logger.map(Logger.logfmtLogger, () => undefined))
  const ours = await Effect.runPromise(
    A2AServer.make({
      agent: (request) => {
        const part = request.message.parts[0]?.content
        return part?.$case === "text" && part.value === "fail"
          ? Effect.fail(new Error("trivial failure"))
          : Effect.succeed(AgentExecutor.completedText("ok"))
      },
      card: { name: "ours", description: "bench" }
    }).pipe(Scope.extend(scope), Effect.provide(quietLogger))
  )
  const theirs = await startExpress()
  const factory = new ClientFactory({ transports: [new JsonRpcTransportFactory()] })
  const ourClient = await factory.createFromUrl(ours.url)
  const theirClient = await factory.createFromUrl(theirs.url)

  // Warm-up.
  await round(ourClient, "ok")
  await round(ourClient, "fail")
  await round(theirClient, "ok")

  // Each round runs the three series in a rotated order, so that load from
  // elsewhere on the machine spreads over all of them; the per-round ratios'
  // median is reported next to the totals.
  const totals = { ours: 0, express: 0, failed: 0 }
  const throughputRatios: Array<number> = []
  const failedRatios: Array<number> = []
  const series = [
    ["ours", ourClient, "ok"],
    ["express", theirClient, "ok"],
    ["failed", ourClient, "fail"]
  ] as const
  for (let i = 0; i < ROUNDS; i++) {
    const times = { ours: 0, express: 0, failed: 0 }
    for (let j = 0; j < series.length; j++) {
      const [name, client, text] = series[(i + j) % series.length]!
      times[name] = await round(client, text)
      totals[name] += times[name]
    }
    throughputRatios.push(times.express / times.ours)
    failedRatios.push(times.failed / times.ours)
  }
  const median = (values: Array<number>) => {
    const sorted = [...values].sort((a, b) => a - b)
    const mid = Math.floor(sorted.length / 2)
    return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
  }
  const rps = (ms: number) => (PER_ROUND * ROUNDS) / (ms / 1000)
  console.log(`concurrency ${CONCURRENCY}, ${ROUNDS} rounds of ${PER_ROUND} requests per series, interleaved`)
  console.log(`A2AServer COMPLETED: ${rps(totals.ours).toFixed(0)} req/s`)
  console.log(`SDK Express:         ${rps(totals.express).toFixed(0)} req/s`)
  console.log(`A2AServer FAILED:    ${rps(totals.failed).toFixed(0)} req/s`)
  console.log(
    `ratio ours/express throughput: ${(rps(totals.ours) / rps(totals.express)).toFixed(2)} overall, ${
      median(throughputRatios).toFixed(2)
    } median of rounds (target >= 1.0)`
  )
  console.log(
    `ratio FAILED/COMPLETED time:   ${(totals.failed / totals.ours).toFixed(2)} overall, ${
      median(failedRatios).toFixed(2)
    } median of rounds (target <= 1.2)`
  )
  // Time per request, so that a ratio below 1 means ours is faster.
  report("server-throughput", [
    {
      name: "A2AServer vs SDK Express jsonRpcHandler, ms per request (inverse throughput)",
      ours: totals.ours / (PER_ROUND * ROUNDS),
      peer: totals.express / (PER_ROUND * ROUNDS),
      unit: "ms",
      target: "<= 1.0",
      pass: totals.ours <= totals.express
    },
    {
      name: "A2AServer FAILED vs COMPLETED path, ms per request",
      ours: totals.failed / (PER_ROUND * ROUNDS),
      peer: totals.ours / (PER_ROUND * ROUNDS),
      unit: "ms",
      target: "<= 1.2",
      pass: totals.failed / totals.ours <= 1.2
    }
  ])
  await theirs.close()
  await Effect.runPromise(Scope.close(scope, Exit.void))
}

main().catch((error) => {
  console.error(error)
  process.exitCode = 1
})
