/**
 * Heap per in-flight task: `BENCH_IN_FLIGHT` (1,000) blocking sends at once,
 * each to an agent that sleeps `BENCH_SLEEP_MS` (10 s), on A2AServer and on
 * the `@a2a-js/sdk` Express server (`jsonRpcHandler`, `DefaultRequestHandler`,
 * `InMemoryTaskStore`, an executor that sleeps the same), both called by the
 * SDK's raw JSON-RPC client from this process.
 *
 * Each server runs alone in a child process of its own, started fresh for
 * each measurement: one heap holds one server and nothing else (no client,
 * no other server, no garbage of an earlier series), and its `heapUsed`
 * after `gc()` is that server's alone. Each child is warmed up first
 * (`WARMUP` sends that do not sleep, a few at a time, so that the
 * connections of the sends measured are their own). Its heap is read
 * once, then again once every send measured is in its agent and before
 * any has woken: the difference divided by the sends is the figure. The
 * sends go over one connection each, as a caller's would.
 *
 * Series alternate over `BENCH_ROUNDS` (2) rounds; the mean per series is
 * reported. With `BENCH_HEAP_SNAPSHOTS=<dir>`, each child also writes a
 * heap snapshot at both points, and the bytes per task are broken down by
 * constructor (the 30 largest differences, printed).
 *
 *   npx tsx bench/inflight-memory.ts
 *   npm run build && BENCH_BUILT=1 npx tsx bench/inflight-memory.ts
 *
 * Target: ours / Express <= 1.0.
 */
import { AGENT_CARD_PATH, type AgentCard, type Message, TaskState } from "@a2a-js/sdk"
import { ClientFactory, JsonRpcTransportFactory } from "@a2a-js/sdk/client"
import {
  AgentEvent,
  type AgentExecutor as SdkAgentExecutor,
  DefaultRequestHandler,
  InMemoryTaskStore
} from "@a2a-js/sdk/server"
import { agentCardHandler, jsonRpcHandler, UserBuilder } from "@a2a-js/sdk/server/express"
import { Effect, Logger, LogLevel, Scope } from "effect"
import express from "express"
import { readFileSync, rmSync } from "node:fs"
import type { AddressInfo } from "node:net"
import { join } from "node:path"
import * as v8 from "node:v8"
import * as vm from "node:vm"
import type * as A2AServer from "../src/A2AServer.js"
import type * as AgentExecutor from "../src/AgentExecutor.js"
import type * as Part from "../src/Part.js"
import { agentMessage, cardFor, sdkRequest } from "../test/fixtures/peers.js"
import { forkServer } from "./child.js"
import { report } from "./report.js"

const IN_FLIGHT = Number(process.env.BENCH_IN_FLIGHT ?? 1000)
const SLEEP_MS = Number(process.env.BENCH_SLEEP_MS ?? 10_000)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2)
const WARMUP = Number(process.env.BENCH_WARMUP ?? 2000)
const SNAPSHOTS = process.env.BENCH_HEAP_SNAPSHOTS
const KB = 1024

type Series = "ours" | "express"

// ---- the child: one server, its agent counting the runs asleep ----

/** Runs that reached their agent's sleep, and runs that woke from it. */
const runs = { asleep: 0, woke: 0 }

// A send whose text is "sleep" sleeps; any other (the warm-up's) answers at once.
const sleeps = (text: string) => text === "sleep"

// The library as a user runs it with `BENCH_BUILT=1` (after `npm run build`): tsx compiles the sources
// keeping the names of functions, and a closure named so holds 256 more bytes (its own property store).
const library = (): Promise<[typeof A2AServer, typeof AgentExecutor, typeof Part]> => {
  const from = process.env.BENCH_BUILT === undefined ? "../src" : "../dist"
  return Promise.all([import(`${from}/A2AServer.js`), import(`${from}/AgentExecutor.js`), import(`${from}/Part.js`)])
}

const startOurs = async () => {
  const [A2AServer, AgentExecutor, Part] = await library()
  const server = await Effect.runPromise(
    A2AServer.make({
      agent: (request) =>
        sleeps(Part.textOf(request.message.parts))
          ? Effect.suspend(() => {
            runs.asleep++
            return Effect.sleep(SLEEP_MS)
          }).pipe(Effect.map(() => {
            runs.woke++
            return AgentExecutor.completedText("done")
          }))
          : Effect.succeed(AgentExecutor.completedText("done")),
      card: { name: "ours", description: "sleeps, then completes" }
    }).pipe(Scope.extend(Effect.runSync(Scope.make())), Logger.withMinimumLogLevel(LogLevel.Warning))
  )
  return server.url
}

// As the SDK's examples write an executor: the task first, WORKING, then its final status.
const sleepingExecutor: SdkAgentExecutor = {
  execute: async (context, bus) => {
    const { contextId, taskId } = context
    const status = (state: TaskState, message?: Message) => ({ state, message, timestamp: new Date().toISOString() })
    bus.publish(AgentEvent.task({
      id: taskId,
      contextId,
      status: status(TaskState.TASK_STATE_WORKING),
      artifacts: [],
      history: [context.userMessage],
      metadata: {}
    }))
    const text = context.userMessage.parts.map((part) => (part.content?.$case === "text" ? part.content.value : ""))
      .join("")
    if (sleeps(text)) {
      runs.asleep++
      await new Promise((resolve) => setTimeout(resolve, SLEEP_MS))
      runs.woke++
    }
    const done = { ...agentMessage("done"), taskId, contextId }
    bus.publish(
      AgentEvent.statusUpdate({ taskId, contextId, status: status(TaskState.TASK_STATE_COMPLETED, done), metadata: {} })
    )
    bus.finished()
  },
  cancelTask: async () => {}
}

const startExpress = async () => {
  const app = express()
  const server = app.listen(0, "127.0.0.1")
  await new Promise<void>((resolve) => server.once("listening", () => resolve()))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const card: AgentCard = { ...cardFor(`${url}/a2a/jsonrpc`), name: "express", description: "sleeps, then completes" }
  const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), sleepingExecutor)
  app.use(`/${AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: handler }))
  app.use("/a2a/jsonrpc", jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }))
  return url
}

interface Reading {
  readonly heap: number
  readonly asleep: number
  readonly woke: number
}

const serve = async (which: Series) => {
  // `bench/run.ts` starts every bench without `--expose-gc`: expose it from here.
  v8.setFlagsFromString("--expose-gc")
  const gc = vm.runInNewContext("gc") as () => void
  const url = which === "ours" ? await startOurs() : await startExpress()
  process.on("message", async (message: { readonly read: "baseline" | "steady"; readonly snapshot?: string }) => {
    // Every send measured is in its agent: what each holds is all there.
    const deadline = Date.now() + SLEEP_MS
    while (message.read === "steady" && runs.asleep < IN_FLIGHT && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    for (let i = 0; i < 3; i++) gc()
    const reading: Reading = { heap: process.memoryUsage().heapUsed, asleep: runs.asleep, woke: runs.woke }
    if (message.snapshot !== undefined) v8.writeHeapSnapshot(message.snapshot)
    process.send!(reading)
  })
  process.send!(url)
}

// ---- the parent: the caller, and the figures ----

interface Measured {
  readonly perTask: number
  readonly snapshots?: readonly [string, string]
}

const measure = async (which: Series, round: number): Promise<Measured> => {
  const server = await forkServer<Reading>(import.meta.filename, which)
  const read = (read: "baseline" | "steady", snapshot?: string) =>
    server.ask({ read, ...(snapshot === undefined ? {} : { snapshot }) })
  try {
    const client = await new ClientFactory({ transports: [new JsonRpcTransportFactory()] }).createFromUrl(server.url)
    // Warm-up: a few sends at a time, so that few connections are left open in the baseline.
    let next = 0
    await Promise.all(Array.from({ length: 8 }, async () => {
      while (next++ < WARMUP) await client.sendMessage(sdkRequest("now"))
    }))
    const snapshots = SNAPSHOTS === undefined
      ? undefined
      : ([
        join(SNAPSHOTS, `${which}-${round}-baseline.heapsnapshot`),
        join(SNAPSHOTS, `${which}-${round}-steady.heapsnapshot`)
      ] as const)
    const baseline = await read("baseline", snapshots?.[0])
    const sends = Array.from({ length: IN_FLIGHT }, () => client.sendMessage(sdkRequest("sleep")))
    const steady = await read("steady", snapshots?.[1])
    if (steady.asleep !== IN_FLIGHT || steady.woke !== 0) {
      throw new Error(`${which}: ${steady.asleep} of ${IN_FLIGHT} sends asleep and ${steady.woke} woke when measured`)
    }
    const answers = await Promise.all(sends)
    const completed = answers.filter((answer) =>
      "status" in answer && answer.status?.state === TaskState.TASK_STATE_COMPLETED
    )
    if (completed.length !== IN_FLIGHT) throw new Error(`${which}: ${completed.length} of ${IN_FLIGHT} sends completed`)
    return { perTask: (steady.heap - baseline.heap) / IN_FLIGHT, ...(snapshots === undefined ? {} : { snapshots }) }
  } finally {
    server.child.kill()
  }
}

/** Bytes of the heap by constructor (or kind of object), from a heap snapshot. */
const byConstructor = (file: string): Map<string, { bytes: number; count: number }> => {
  const snapshot = JSON.parse(readFileSync(file, "utf8")) as {
    snapshot: { meta: { node_fields: Array<string>; node_types: [Array<string>, ...Array<unknown>] } }
    nodes: Array<number>
    strings: Array<string>
  }
  const fields = snapshot.snapshot.meta.node_fields
  const types = snapshot.snapshot.meta.node_types[0]
  const [typeAt, nameAt, sizeAt] = ["type", "name", "self_size"].map((field) => fields.indexOf(field))
  const totals = new Map<string, { bytes: number; count: number }>()
  for (let i = 0; i < snapshot.nodes.length; i += fields.length) {
    const type = types[snapshot.nodes[i + typeAt!]!]!
    const name = snapshot.strings[snapshot.nodes[i + nameAt!]!]!
    const key = type === "object" || type === "native"
      ? name
      : type === "closure"
      ? `(closure) ${name || "anonymous"}`
      : type === "string" || type === "concatenated string" || type === "sliced string"
      ? "(string)"
      : `(${type}) ${type === "hidden" || type === "array" || type === "object shape" ? name : ""}`.trim()
    const total = totals.get(key) ?? { bytes: 0, count: 0 }
    total.bytes += snapshot.nodes[i + sizeAt!]!
    total.count++
    totals.set(key, total)
  }
  return totals
}

const breakdown = (which: Series, [baseline, steady]: readonly [string, string]) => {
  const before = byConstructor(baseline)
  const after = byConstructor(steady)
  const rows = [...after].map(([key, total]) => {
    const was = before.get(key) ?? { bytes: 0, count: 0 }
    return { key, bytes: (total.bytes - was.bytes) / IN_FLIGHT, count: (total.count - was.count) / IN_FLIGHT }
  }).sort((a, b) => Math.abs(b.bytes) - Math.abs(a.bytes))
  const sum = rows.reduce((total, row) => total + row.bytes, 0)
  console.log(`\n${which}: ${(sum / KB).toFixed(1)} KB per task in the snapshots; the largest, per task:`)
  for (const row of rows.slice(0, 30)) {
    console.log(`  ${row.bytes.toFixed(0).padStart(6)} B  ${row.count.toFixed(2).padStart(6)} objects  ${row.key}`)
  }
}

const main = async () => {
  const perTask: Record<Series, Array<number>> = { ours: [], express: [] }
  for (let round = 0; round < ROUNDS; round++) {
    const order: ReadonlyArray<Series> = round % 2 === 0 ? ["ours", "express"] : ["express", "ours"]
    for (const which of order) {
      const measured = await measure(which, round)
      perTask[which].push(measured.perTask / KB)
      console.error(`round ${round + 1}: ${which} ${(measured.perTask / KB).toFixed(1)} KB per in-flight task`)
      if (measured.snapshots !== undefined) {
        breakdown(which, measured.snapshots)
        if (process.env.BENCH_KEEP_SNAPSHOTS === undefined) { for (const file of measured.snapshots) rmSync(file) }
      }
    }
  }
  const mean = (values: ReadonlyArray<number>) => values.reduce((sum, value) => sum + value, 0) / values.length
  const spread = (values: ReadonlyArray<number>) =>
    `${Math.min(...values).toFixed(1)} to ${Math.max(...values).toFixed(1)}`
  console.log(
    `KB per in-flight task over ${ROUNDS} rounds: ours ${spread(perTask.ours)}, Express ${spread(perTask.express)}`
  )
  const ours = mean(perTask.ours)
  const peer = mean(perTask.express)
  report("inflight-memory", [
    {
      name: `heap per in-flight task, ${IN_FLIGHT} blocking sends asleep in the agent: A2AServer vs SDK Express`,
      ours,
      peer,
      unit: "KB",
      target: "<= 1.0",
      pass: ours <= peer
    }
  ])
}
;(process.argv[2] === "serve" ? serve(process.argv[3] as Series) : main()).catch((error) => {
  console.error(error)
  process.exitCode = 1
})
