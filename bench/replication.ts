/**
 * Replicas on one PostgreSQL (`A2AServer` `replication: { url }`), each
 * figure beside the same measure on one server with no replication (the SDK's
 * in-memory bus) or, for latency, beside a subscriber on the run's own replica.
 *
 * Every server is a child process of its own (this file forked with
 * `serve replica` or `serve single`); the subscribers are the SDK's JSON-RPC
 * client (`resubscribeTask`) in this process. The agent stamps each status
 * with the wall clock (`performance.timeOrigin + performance.now()`, one
 * clock for every process of the machine) and the subscriber subtracts it
 * from the time the event reached it. A run waits, before its first status,
 * until a file exists: the benchmark creates it once every subscriber has
 * its Task, so no subscriber joins late.
 *
 *   BENCH_RESULTS=/tmp/rows.jsonl node --import tsx bench/replication.ts
 *
 * 1. Cross-replica latency: a run on A, a subscriber on B and one on A.
 *    Target p99 <= 10 ms (B's), within the machine's spread.
 * 2. Events per second through the bus, one task and 100 at once, delivered
 *    to subscribers on B against the same on one server without replication.
 * 3. 1,000 subscribers (10 runs, 100 subscribers each) over three replicas
 *    against the same 1,000 on one server: the heap and RSS the subscribers
 *    add to the servers (after a full GC), and p99 latency.
 *
 * With BENCH_REPL_CARRY=1, only the cross-replica latency, with carried
 * events against `carryEvents: false`, in alternating rounds (see below).
 */
import type { StreamResponse, Task } from "@a2a-js/sdk"
import { type Client, ClientFactory, JsonRpcTransportFactory } from "@a2a-js/sdk/client"
import { PgClient } from "@effect/sql-pg"
import { Effect, Logger, LogLevel, Redacted } from "effect"
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { setFlagsFromString } from "node:v8"
import { runInNewContext } from "node:vm"
import * as A2AServer from "../src/A2AServer.js"
import * as AgentExecutor from "../src/AgentExecutor.js"
import * as Part from "../src/Part.js"
import { startPostgres } from "../test/fixtures/postgres.js"
import { userMessage } from "../test/fixtures/serverAgents.js"
import { type Child, forkServer } from "./child.js"
import { percentile, report, runMain } from "./report.js"

const LATENCY_EVENTS = Number(process.env.BENCH_REPL_LATENCY_EVENTS ?? 200)
const LATENCY_SPACING = Number(process.env.BENCH_REPL_LATENCY_SPACING ?? 10)
const BURST_EVENTS = Number(process.env.BENCH_REPL_BURST_EVENTS ?? 500)
const CONCURRENT_TASKS = 100
const CONCURRENT_EVENTS = Number(process.env.BENCH_REPL_CONCURRENT_EVENTS ?? 50)
const FANOUT_TASKS = 10
const FANOUT_SUBSCRIBERS = 100
const FANOUT_EVENTS = 10
/** Every wait of the benchmark on a run or a subscriber. */
const WAIT_MS = 60_000
const databaseEnv = "BENCH_REPLICATION_DATABASE"
// With BENCH_REPL_CARRY=1, only the latency phase, carried events against not carried (`carryEvents: false`),
// in alternating rounds of one run: two pairs of replicas, each pair on a database of its own (NOTIFY is per
// database), in one PostgreSQL.
const CARRY_ROUNDS = Number(process.env.BENCH_REPL_CARRY === "1" ? process.env.BENCH_REPL_CARRY_ROUNDS ?? 3 : 0)
const plainDatabaseEnv = "BENCH_REPLICATION_DATABASE_PLAIN"

const now = () => performance.timeOrigin + performance.now()

// ---------------------------------------------------------------------------
// The servers (child processes)

/**
 * `stamp <n> <ms> <gate>`: once the file `gate` exists, n WORKING statuses,
 * `ms` apart (0: as fast as it can), each `#i t=<wall clock>`, then COMPLETED.
 */
const agent: AgentExecutor.Agent<Error> = (request) =>
  Effect.gen(function*() {
    const stamp = /^stamp (\d+) (\d+) (.+)$/.exec(Part.textOf(request.message.parts))
    if (stamp === null) return AgentExecutor.completedText("no stamp")
    const [, n, ms, gate] = stamp
    const deadline = Date.now() + WAIT_MS
    while (!existsSync(gate!)) {
      if (Date.now() > deadline) return yield* Effect.fail(new Error(`gate ${gate} never opened`))
      yield* Effect.sleep("5 millis")
    }
    for (let i = 1; i <= Number(n); i++) {
      if (Number(ms) > 0) yield* Effect.sleep(Number(ms))
      yield* AgentExecutor.status(`#${i} t=${now()}`)
    }
    return AgentExecutor.completedText("done")
  })

const serve = (which: string) => {
  setFlagsFromString("--expose-gc")
  const gc = runInNewContext("gc") as () => void
  const url = process.env[which === "replica-plain" ? plainDatabaseEnv : databaseEnv]!
  const program = Effect.gen(function*() {
    const server = yield* A2AServer.make({
      agent,
      card: { name: `bench-${which}`, description: "replication bench" },
      port: 0,
      shutdownTimeout: "1 second",
      ...(which === "replica" || which === "replica-plain"
        ? {
          taskStore: A2AServer.TaskStoreConfig.Postgres({ url }),
          replication: { url, carryEvents: which === "replica" }
        }
        : {})
    })
    process.on("message", () => {
      gc()
      gc()
      const { heapUsed, rss } = process.memoryUsage()
      process.send!({ heapUsed, rss })
    })
    process.send!(server.url)
    return yield* Effect.never
  })
  program.pipe(
    Effect.scoped,
    Effect.provide(Logger.minimumLogLevel(LogLevel.Error)),
    Effect.runPromise
  ).catch((error) => {
    console.error(error)
    process.exit(2)
  })
}

// ---------------------------------------------------------------------------
// The subscribers (this process)

interface Memory {
  readonly heapUsed: number
  readonly rss: number
}

interface Server {
  readonly child: Child<Memory>
  readonly client: Client
}

/** A server process, stopped with the scope. */
const start = (which: "replica" | "replica-plain" | "single") =>
  Effect.acquireRelease(
    Effect.promise(async (): Promise<Server> => {
      const child = await forkServer<Memory>(import.meta.filename, which)
      const client = await new ClientFactory({ transports: [new JsonRpcTransportFactory()] }).createFromUrl(child.url)
      return { child, client }
    }),
    ({ child }) =>
      Effect.async<void>((resume) => {
        if (child.child.exitCode !== null || child.child.signalCode !== null) return resume(Effect.void)
        const force = setTimeout(() => child.child.kill("SIGKILL"), 5_000)
        child.child.once("exit", () => {
          clearTimeout(force)
          resume(Effect.void)
        })
        child.child.kill("SIGTERM")
      })
  )

/** A file that does not exist yet, and the way to create it. */
const gates = (dir: string) => {
  let next = 0
  return () => {
    const path = join(dir, `gate-${next++}`)
    return { path, open: () => writeFileSync(path, "") }
  }
}

/** Starts a run of `stamp n ms gate` on `server`, without waiting for it: its task's id. */
const startRun = async (server: Server, n: number, ms: number, gate: string): Promise<string> => {
  const task = await server.client.sendMessage({
    tenant: "",
    message: userMessage(`stamp ${n} ${ms} ${gate}`),
    configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately: true },
    metadata: {}
  })
  return (task as Task).id
}

interface Delivery {
  /** Each status's latency, publish to delivery, in ms. */
  readonly latencies: Array<number>
  /** When the first and the last status reached the subscriber. */
  first: number
  last: number
  ended: boolean
}

/**
 * Subscribes to `taskId` on `server`; resolves `ready` once the Task (the
 * first event) is in, `done` when the stream ends.
 */
const subscribe = (server: Server, taskId: string) => {
  const delivery: Delivery = { latencies: [], first: Number.NaN, last: Number.NaN, ended: false }
  let ready!: () => void
  const head = new Promise<void>((resolve) => (ready = resolve))
  const done = (async () => {
    for await (
      const event of server.client.resubscribeTask({ id: taskId, tenant: "" }) as AsyncGenerator<StreamResponse>
    ) {
      const at = now()
      const payload = event.payload
      if (payload?.$case === "task") ready()
      if (payload?.$case !== "statusUpdate") continue
      const text = payload.value.status?.message?.parts.map((part) =>
        part.content?.$case === "text" ? part.content.value : ""
      ).join("")
      const stamp = /t=([\d.]+)$/.exec(text ?? "")
      if (stamp === null) {
        delivery.ended = true
        continue
      }
      delivery.latencies.push(at - Number(stamp[1]))
      if (Number.isNaN(delivery.first)) delivery.first = at
      delivery.last = at
    }
    ready()
  })()
  return { delivery, ready: head, done }
}

/** `promise`, or a failure after `WAIT_MS`. */
const bounded = <A>(what: string, promise: Promise<A>): Promise<A> =>
  Promise.race([
    promise,
    new Promise<never>((_, reject) =>
      setTimeout(() => reject(new Error(`${what}: no end within ${WAIT_MS} ms`)), WAIT_MS).unref()
    )
  ])

/**
 * Runs `tasks` runs of `events` statuses `ms` apart (each on `runOn(i)`), with
 * `perTask` subscribers each (the j-th on `subscribeOn(i, j)`), and opens the
 * gate once every subscriber has its Task. `whenStarted` runs once the runs
 * are started, before any subscriber; `whileReady` just before the gate opens.
 */
const scenario = async (options: {
  readonly gate: { readonly path: string; readonly open: () => void }
  readonly tasks: number
  readonly events: number
  readonly ms: number
  readonly perTask: number
  readonly runOn: (i: number) => Server
  readonly subscribeOn: (i: number, j: number) => Server
  readonly whenStarted?: () => Promise<void>
  readonly whileReady?: () => Promise<void>
}) => {
  const ids = await Promise.all(
    Array.from(
      { length: options.tasks },
      (_, i) => startRun(options.runOn(i), options.events, options.ms, options.gate.path)
    )
  )
  await options.whenStarted?.()
  const subscriptions = ids.map((id, i) =>
    Array.from({ length: options.perTask }, (_, j) => subscribe(options.subscribeOn(i, j), id))
  )
  const all = subscriptions.flat()
  await bounded("subscribing", Promise.all(all.map((s) => s.ready)))
  await options.whileReady?.()
  const opened = now()
  options.gate.open()
  await bounded("the runs", Promise.all(all.map((s) => s.done)))
  for (const { delivery } of all) {
    if (delivery.latencies.length !== options.events || !delivery.ended) {
      throw new Error(
        `a subscriber got ${delivery.latencies.length} of ${options.events} statuses (ended: ${delivery.ended})`
      )
    }
  }
  return { opened, subscriptions: subscriptions.map((perTask) => perTask.map((s) => s.delivery)) }
}

/** Statuses delivered per second: all subscribers' statuses over the time from the gate to the last one delivered. */
const throughput = (
  result: { readonly opened: number; readonly subscriptions: ReadonlyArray<ReadonlyArray<Delivery>> }
) => {
  const deliveries = result.subscriptions.flat()
  const events = deliveries.reduce((sum, d) => sum + d.latencies.length, 0)
  const last = Math.max(...deliveries.map((d) => d.last))
  return events / ((last - result.opened) / 1000)
}

const memoryOf = (servers: ReadonlyArray<Server>) =>
  Promise.all(servers.map((s) => s.child.ask("memory"))).then((all) =>
    all.reduce((sum, m) => ({ heapUsed: sum.heapUsed + m.heapUsed, rss: sum.rss + m.rss }), { heapUsed: 0, rss: 0 })
  )

const bench = Effect.gen(function*() {
  const pg = yield* Effect.acquireRelease(
    Effect.promise(() => startPostgres()),
    (pg) => Effect.promise(() => pg.stop())
  )
  process.env[databaseEnv] = pg.url
  const dir = mkdtempSync(join(tmpdir(), "effect-a2a-replbench-"))
  yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
  const gate = gates(dir)
  if (CARRY_ROUNDS > 0) return yield* carryBench(pg.url, gate)
  // Replicas first, one at a time: the first creates the tables the others find.
  const a = yield* start("replica")
  const [b, c, single] = yield* Effect.all([start("replica"), start("replica"), start("single")], {
    concurrency: "unbounded"
  })
  const rows: Array<Parameters<typeof report>[1][number]> = []
  const warm = (server: Server, on: Server) =>
    scenario({ gate: gate(), tasks: 1, events: 20, ms: 1, perTask: 1, runOn: () => server, subscribeOn: () => on })
  yield* Effect.promise(() => Promise.all([warm(a, b), warm(b, c), warm(c, a), warm(single, single)]))

  const phase = (what: string) => Effect.sync(() => console.error(`replication: ${what}`))
  yield* phase("latency")
  // 1. Latency: one run on A, one subscriber on B and one on A.
  const latency = yield* Effect.promise(() =>
    scenario({
      gate: gate(),
      tasks: 1,
      events: LATENCY_EVENTS,
      ms: LATENCY_SPACING,
      perTask: 2,
      runOn: () => a,
      subscribeOn: (_, j) => (j === 0 ? b : a)
    })
  )
  const alone = yield* Effect.promise(() =>
    scenario({
      gate: gate(),
      tasks: 1,
      events: LATENCY_EVENTS,
      ms: LATENCY_SPACING,
      perTask: 1,
      runOn: () => single,
      subscribeOn: () => single
    })
  )
  const [onB, onA] = latency.subscriptions[0]!
  const onSingle = alone.subscriptions[0]![0]!
  const setting = `${LATENCY_EVENTS} statuses ${LATENCY_SPACING} ms apart`
  for (const p of [50, 99]) {
    const ours = percentile(onB!.latencies, p)
    rows.push({
      name:
        `cross-replica (run on A, subscriber on B) vs same replica (subscriber on A), publish to delivery, p${p}, ${setting}`,
      ours,
      peer: percentile(onA!.latencies, p),
      unit: "ms",
      target: p === 99 ? "<= 10 ms (informative within spread)" : "informative",
      pass: p === 99 ? ours <= 10 : true
    })
  }
  for (const p of [50, 99]) {
    rows.push({
      name:
        `same replica (run and subscriber on A) vs one server with no replication, publish to delivery, p${p}, ${setting}`,
      ours: percentile(onA!.latencies, p),
      peer: percentile(onSingle.latencies, p),
      unit: "ms",
      target: "informative",
      pass: true
    })
  }
  yield* phase("events per second")
  // 2. Events per second: as fast as the run publishes, at a subscriber on B vs on the one server.
  const burst = (runOn: Server, subscribeOn: Server, tasks: number, events: number) =>
    Effect.promise(() =>
      scenario({ gate: gate(), tasks, events, ms: 0, perTask: 1, runOn: () => runOn, subscribeOn: () => subscribeOn })
        .then(throughput)
    )
  const oneOurs = yield* burst(a, b, 1, BURST_EVENTS)
  const onePeer = yield* burst(single, single, 1, BURST_EVENTS)
  rows.push({
    name:
      `statuses per second delivered, one task of ${BURST_EVENTS}: run on A, subscriber on B vs one server with no replication`,
    ours: oneOurs,
    peer: onePeer,
    unit: "/s",
    target: "informative",
    pass: true
  })
  const manyOurs = yield* burst(a, b, CONCURRENT_TASKS, CONCURRENT_EVENTS)
  const manyPeer = yield* burst(single, single, CONCURRENT_TASKS, CONCURRENT_EVENTS)
  rows.push({
    name:
      `statuses per second delivered, ${CONCURRENT_TASKS} tasks of ${CONCURRENT_EVENTS} at once: runs on A, subscribers on B vs one server`,
    ours: manyOurs,
    peer: manyPeer,
    unit: "/s",
    target: "informative",
    pass: true
  })

  yield* phase("1,000 subscribers")
  // 3. 1,000 subscribers: 10 runs spread over the replicas, 100 subscribers each, spread too.
  const replicas = [a, b, c]
  const subscribers = FANOUT_TASKS * FANOUT_SUBSCRIBERS
  const measured = (
    runOn: (i: number) => Server,
    subscribeOn: (i: number, j: number) => Server,
    servers: ReadonlyArray<Server>
  ) =>
    Effect.gen(function*() {
      // The runs' own memory is in both readings: the baseline is read with them started, before any subscriber.
      let baseline: Memory = { heapUsed: 0, rss: 0 }
      let after = baseline
      const result = yield* Effect.promise(() =>
        scenario({
          gate: gate(),
          tasks: FANOUT_TASKS,
          events: FANOUT_EVENTS,
          ms: 100,
          perTask: FANOUT_SUBSCRIBERS,
          runOn,
          subscribeOn,
          whenStarted: async () => {
            baseline = await memoryOf(servers)
          },
          whileReady: async () => {
            after = await memoryOf(servers)
          }
        })
      )
      return {
        heap: (after.heapUsed - baseline.heapUsed) / subscribers,
        rss: (after.rss - baseline.rss) / subscribers,
        p99: percentile(result.subscriptions.flat().flatMap((d) => d.latencies), 99)
      }
    })
  const spread = yield* measured((i) => replicas[i % 3]!, (i, j) => replicas[(i + j) % 3]!, replicas)
  const one = yield* measured(() => single, () => single, [single])
  rows.push(
    {
      name:
        `${subscribers} subscribers (${FANOUT_TASKS} runs x ${FANOUT_SUBSCRIBERS}) over three replicas vs on one server: heap per subscriber`,
      ours: spread.heap / 1024,
      peer: one.heap / 1024,
      unit: "KiB",
      target: "informative",
      pass: true
    },
    {
      name: `the same: RSS per subscriber`,
      ours: spread.rss / 1024,
      peer: one.rss / 1024,
      unit: "KiB",
      target: "informative",
      pass: true
    },
    {
      name: `the same: p99 publish to delivery, ${FANOUT_EVENTS} statuses 100 ms apart per run`,
      ours: spread.p99,
      peer: one.p99,
      unit: "ms",
      target: "informative",
      pass: true
    }
  )
  report("replication", rows)
})

/** Cross-replica latency with carried events against without, `CARRY_ROUNDS` alternating rounds. */
const carryBench = (url: string, gate: ReturnType<typeof gates>) =>
  Effect.gen(function*() {
    const plainUrl = url.replace(/\/postgres$/, "/plain")
    yield* Effect.scoped(Effect.flatMap(PgClient.PgClient, (sql) => sql`create database plain`)).pipe(
      Effect.provide(PgClient.layer({ url: Redacted.make(url) })),
      Effect.orDie
    )
    process.env[plainDatabaseEnv] = plainUrl
    const a = yield* start("replica")
    const b = yield* start("replica")
    const plainA = yield* start("replica-plain")
    const plainB = yield* start("replica-plain")
    const warm = (server: Server, on: Server) =>
      scenario({ gate: gate(), tasks: 1, events: 20, ms: 1, perTask: 1, runOn: () => server, subscribeOn: () => on })
    yield* Effect.promise(() => Promise.all([warm(a, b), warm(b, a), warm(plainA, plainB), warm(plainB, plainA)]))
    const onB: Record<"carried" | "plain", Array<Array<number>>> = { carried: [], plain: [] }
    const latency = (runOn: Server, subscribeOn: Server) =>
      Effect.promise(() =>
        scenario({
          gate: gate(),
          tasks: 1,
          events: LATENCY_EVENTS,
          ms: LATENCY_SPACING,
          perTask: 1,
          runOn: () => runOn,
          subscribeOn: () => subscribeOn
        })
      ).pipe(Effect.map((result) => result.subscriptions[0]![0]!.latencies))
    for (let round = 0; round < CARRY_ROUNDS; round++) {
      // Alternating which goes first, so that neither always runs on the warmer machine.
      const order = round % 2 === 0 ? ["carried", "plain"] as const : ["plain", "carried"] as const
      for (const which of order) {
        onB[which].push(yield* which === "carried" ? latency(a, b) : latency(plainA, plainB))
      }
      console.error(
        `replication carry round ${round + 1}: p50 ${percentile(onB.carried.at(-1)!, 50).toFixed(2)} vs ${
          percentile(onB.plain.at(-1)!, 50).toFixed(2)
        } ms, p99 ${percentile(onB.carried.at(-1)!, 99).toFixed(2)} vs ${
          percentile(onB.plain.at(-1)!, 99).toFixed(2)
        } ms`
      )
    }
    const setting = `${LATENCY_EVENTS} statuses ${LATENCY_SPACING} ms apart, ${CARRY_ROUNDS} rounds`
    report(
      "replication",
      [50, 99].map((p) => ({
        name: `cross-replica publish to delivery, carried events vs carryEvents: false, p${p}, ${setting}`,
        ours: percentile(onB.carried.flat(), p),
        peer: percentile(onB.plain.flat(), p),
        unit: "ms",
        target: "informative",
        pass: true
      }))
    )
  })

if (process.argv[2] === "serve") serve(process.argv[3]!)
else runMain(bench)
