/**
 * Server CPU per request of A2AServer with the playground's defaults (push
 * on with no config ever saved, the bounded memory store with a small
 * `maxFinished`, so that it evicts all through the run) against the
 * `@a2a-js/sdk` server on each transport (Express `jsonRpcHandler`, Express
 * `restHandler`, `grpcService` on grpc-js), the same trivial agent on both
 * sides; and beside it A2AServer plain (no push, the default store), so that
 * features turned on but unused show as a ratio of their own, defaults /
 * plain, meant to be 1.
 *
 *   BENCH_RESULTS=/tmp/rows.jsonl node --import tsx bench/playground-defaults.ts
 *
 * One transport at a time, each series in its own server process (CPU time is
 * then the server's alone, as in `server-throughput`), the three series of a
 * transport interleaved round by round after a warm-up. The caller is the
 * SDK's client on that transport alone, in this process.
 * `BENCH_ROUNDS` and `BENCH_WARMUP_ROUNDS` (rounds of 300 requests per series)
 * and `BENCH_MAX_FINISHED` (the defaults' store bound) override the short
 * default run.
 */
import { AGENT_CARD_PATH, type AgentCard } from "@a2a-js/sdk"
import {
  type Client,
  ClientFactory,
  JsonRpcTransportFactory,
  RestTransportFactory,
  type TransportFactory
} from "@a2a-js/sdk/client"
import { GrpcTransportFactory } from "@a2a-js/sdk/client/grpc"
import { DefaultRequestHandler, InMemoryTaskStore } from "@a2a-js/sdk/server"
import { agentCardHandler, jsonRpcHandler, UserBuilder } from "@a2a-js/sdk/server/express"
import { grpcService } from "@a2a-js/sdk/server/grpc"
import type { UntypedServiceImplementation } from "@grpc/grpc-js"
import { Effect, Scope } from "effect"
import express from "express"
import type { AddressInfo } from "node:net"
import * as A2AServer from "../src/A2AServer.js"
import { cardFor, sdkRequest } from "../test/fixtures/peers.js"
import { sdkRestPeer } from "../test/fixtures/restPeer.js"
import { cardWith, grpcServer } from "../test/fixtures/transportPeers.js"
import { forkServer } from "./child.js"
import { median, report, type Row } from "./report.js"
import { CONCURRENCY, interleave, PER_ROUND, perRequest, round, startOurs, trivialExecutor } from "./serverLoad.js"

// As in server-throughput: a cost of running through tsx, not of the servers.
process.setSourceMapsEnabled(false)

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 10)
const WARMUP_ROUNDS = Number(process.env.BENCH_WARMUP_ROUNDS ?? 10)
// Far below the requests of a run: every task past the first hundred evicts one.
const MAX_FINISHED = Number(process.env.BENCH_MAX_FINISHED ?? 100)

const transports = [
  { transport: "JSONRPC", label: "JSON-RPC", sdk: "Express jsonRpcHandler", factory: new JsonRpcTransportFactory() },
  { transport: "HTTP+JSON", label: "HTTP+JSON", sdk: "Express restHandler", factory: new RestTransportFactory() },
  { transport: "GRPC", label: "gRPC", sdk: "grpcService on grpc-js", factory: new GrpcTransportFactory() }
] as const satisfies ReadonlyArray<
  { transport: A2AServer.Transport; factory: TransportFactory } & Record<string, unknown>
>

type Transport = (typeof transports)[number]["transport"]
const kinds = ["sdk", "plain", "defaults"] as const
type Kind = (typeof kinds)[number]

// The SDK's server for `transport`, for the life of `scope`: its card.
const startSdk = (scope: Scope.Scope, transport: Transport): Promise<AgentCard> => {
  if (transport === "HTTP+JSON") {
    return Effect.runPromise(Effect.map(Scope.extend(sdkRestPeer(trivialExecutor), scope), (peer) => peer.card))
  }
  if (transport === "GRPC") {
    // The handler serves what its card lists: the address goes in once the server is bound.
    const card = cardWith([{ protocolBinding: "GRPC", url: "" }])
    const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), trivialExecutor)
    const service = grpcService({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication })
    return Effect.runPromise(
      Effect.map(Scope.extend(grpcServer(service as unknown as UntypedServiceImplementation), scope), (server) => {
        card.supportedInterfaces[0]!.url = server.address
        return card
      })
    )
  }
  return new Promise((resolve) => {
    const app = express()
    const server = app.listen(0, "127.0.0.1", () => {
      const rpcUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/a2a/jsonrpc`
      const card = cardFor(rpcUrl)
      const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), trivialExecutor)
      app.use(`/${AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: handler }))
      app.use("/a2a/jsonrpc", jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }))
      resolve(card)
    })
  })
}

// A child process serving one series alone: it sends its card, then answers each message with its CPU time so far (µs).
const serveAlone = async (which: string) => {
  const [kind, transport] = which.split(":") as [Kind, Transport]
  const scope = Effect.runSync(Scope.make())
  const card = kind === "sdk"
    ? await startSdk(scope, transport)
    : (await startOurs(scope, {
      transports: [transport],
      ...(kind === "defaults"
        ? { push: {}, taskStore: A2AServer.TaskStoreConfig.Memory({ maxFinished: MAX_FINISHED }) }
        : {})
    })).card
  process.on("message", () => {
    const { system, user } = process.cpuUsage()
    process.send!({ cpu: user + system })
  })
  process.send!(JSON.stringify(card))
}

interface Measured {
  readonly cpu: Record<Kind, number>
  /** defaults / plain, round by round. */
  readonly rounds: ReadonlyArray<number>
}

const measureTransport = async ({ factory, transport }: (typeof transports)[number]): Promise<Measured> => {
  const started = await Promise.allSettled(
    kinds.map((kind) => forkServer<{ readonly cpu: number }>(import.meta.filename, `${kind}:${transport}`))
  )
  try {
    const servers = started.map((server) => {
      if (server.status === "rejected") throw server.reason
      return server.value
    })
    const clients = new ClientFactory({ transports: [factory] })
    const series = await Promise.all(
      kinds.map(async (kind, i) => {
        const server = servers[i]!
        const client: Client = await clients.createFromAgentCard(JSON.parse(server.url) as AgentCard)
        return [kind, server, client] as const
      })
    )
    const measure = (rounds: number) =>
      interleave(rounds, series, async ([, server, client]) => {
        const before = await server.ask("usage")
        await round(() => client.sendMessage(sdkRequest("ok")))
        return (await server.ask("usage")).cpu - before.cpu
      })
    await measure(WARMUP_ROUNDS)
    const results = await measure(ROUNDS)
    return { cpu: perRequest(results), rounds: results.map((result) => result.defaults / result.plain) }
  } finally {
    for (const server of started) if (server.status === "fulfilled") server.value.child.kill()
  }
}

const main = async () => {
  const rows: Array<Row> = []
  console.log(
    `concurrency ${CONCURRENCY}, ${ROUNDS} rounds of ${PER_ROUND} requests per series, interleaved, after ${WARMUP_ROUNDS} rounds of warm-up; defaults: push on, maxFinished ${MAX_FINISHED}`
  )
  for (const entry of transports) {
    const { cpu, rounds } = await measureTransport(entry)
    console.log(
      `${entry.label}, server CPU per request: defaults ${cpu.defaults.toFixed(0)} µs, plain ${
        cpu.plain.toFixed(0)
      } µs, SDK ${cpu.sdk.toFixed(0)} µs; defaults/SDK ${(cpu.defaults / cpu.sdk).toFixed(2)}, plain/SDK ${
        (cpu.plain / cpu.sdk).toFixed(2)
      }, defaults/plain ${(cpu.defaults / cpu.plain).toFixed(2)} overall, ${median(rounds).toFixed(2)} median of rounds`
    )
    const each = "each series in its own process, server CPU per request"
    rows.push(
      {
        name: `${entry.label}: A2AServer with the playground's defaults vs SDK ${entry.sdk}, ${each}`,
        ours: cpu.defaults,
        peer: cpu.sdk,
        unit: "µs",
        target: "informative",
        pass: true
      },
      {
        name: `${entry.label}: A2AServer plain vs SDK ${entry.sdk}, ${each}`,
        ours: cpu.plain,
        peer: cpu.sdk,
        unit: "µs",
        target: "informative",
        pass: true
      },
      {
        name: `${entry.label}: A2AServer with the playground's defaults vs plain (features on but unused), ${each}`,
        ours: cpu.defaults,
        peer: cpu.plain,
        unit: "µs",
        // One short run's spread is several hundredths: a figure to compare, not a gate.
        target: "≈ 1.0, informative",
        pass: true
      }
    )
  }
  report("playground-defaults", rows)
}
;(process.argv[2] === "serve" ? serveAlone(process.argv[3]!) : main()).catch((error) => {
  console.error(error)
  process.exitCode = 1
})
