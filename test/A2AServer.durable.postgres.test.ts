/**
 * Durable runs on PostgreSQL, in processes of their own
 * (`fixtures/durableChild.ts`), each test on a database of its own: three
 * replicas, one of which dies by SIGKILL in step 2 of 3, and another takes
 * the run over once its claim lapsed; a subscriber on the third sees one
 * stream, every event once, in order. A single server on PostgreSQL
 * resumes its run at its next start.
 */
import { type StreamResponse, type Task, TaskState } from "@a2a-js/sdk"
import { describe, expect, it } from "@effect/vitest"
import { Effect, type Scope } from "effect"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as path from "node:path"
import * as EventId from "../src/internal/wire/eventId.js"
import { databaseUrl } from "./fixtures/databaseUrl.js"
import * as Durable from "./fixtures/durable.js"

const ended = [TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_FAILED, TaskState.TASK_STATE_CANCELED]

/** Runs one statement on `url`. */
const execute = async (url: string, statement: string): Promise<void> => {
  const pg = createRequire(import.meta.url)("pg")
  const client = new (pg.default ?? pg).Client({ connectionString: url, connectionTimeoutMillis: 10_000 })
  await client.connect()
  try {
    await client.query(statement)
  } finally {
    await client.end()
  }
}

/** A database of the test's own beside this worker's, dropped with the scope: no run of another test is resumed. */
const freshDatabase: Effect.Effect<string, never, Scope.Scope> = Effect.acquireRelease(
  Effect.promise(async () => {
    const name = `durable_${crypto.randomUUID().replaceAll("-", "").slice(0, 12)}`
    await execute(databaseUrl(), `create database ${name}`)
    const url = new URL(databaseUrl())
    url.pathname = `/${name}`
    return { name, url: url.href }
  }),
  ({ name }) => Effect.promise(() => execute(databaseUrl(), `drop database if exists ${name} with (force)`))
).pipe(Effect.map(({ url }) => url))

/** A database of the test's own, a directory for its files, and the side-effect file the children write. */
const workspace = Effect.gen(function*() {
  const url = yield* freshDatabase
  const dir = yield* Durable.workDir
  return { url, dir, sideFile: path.join(dir, "side-effects") }
})

/** Every event of `events` until the stream ends, for at most `millis`. */
const collect = (events: AsyncGenerator<StreamResponse>, millis = 30_000): Promise<Array<StreamResponse>> => {
  const seen: Array<StreamResponse> = []
  return Promise.race([
    (async () => {
      for await (const event of events) seen.push(event)
      return seen
    })(),
    new Promise<never>((_, reject) =>
      setTimeout(
        () => reject(new Error(`the stream stayed open after ${millis} ms: ${JSON.stringify(seen.map(shapeOf))}`)),
        millis
      ).unref()
    )
  ])
}

const placeKey = "effect-a2a/place"

/**
 * What an event says, in a line: `<state> <text or data>` for a status, `artifact <id>` for an
 * artifact; its place in the run (`effect-a2a/place`) and its number in the log.
 */
const shapeOf = (event: StreamResponse) => {
  const payload = event.payload
  const metadata = payload?.$case === "statusUpdate" || payload?.$case === "artifactUpdate"
    ? payload.value.metadata
    : undefined
  const place = metadata?.[placeKey]
  const shape = { place: typeof place === "number" ? place : undefined, seq: EventId.sequenceOf(event) }
  if (payload?.$case === "artifactUpdate") return { line: `artifact ${payload.value.artifact?.artifactId}`, ...shape }
  if (payload?.$case !== "statusUpdate") return { line: String(payload?.$case), ...shape }
  const status = payload.value.status
  const content = (status?.message?.parts ?? []).map((part) =>
    part.content?.$case === "text"
      ? part.content.value
      : part.content?.$case === "data"
      ? JSON.stringify(part.content.value)
      : ""
  ).join("")
  return { line: `${TaskState[status!.state]} ${content}`, ...shape }
}

describe("durable runs on PostgreSQL", () => {
  it.scopedLive(
    "three replicas: one SIGKILLed in step 2 of 3, another finishes the run; step 1 happened once; a subscriber on the third saw every event once, in order",
    () =>
      Effect.gen(function*() {
        const { dir, sideFile, url } = yield* workspace
        const gate = path.join(dir, "gate")
        // One first, which creates the tables the others find.
        const a = yield* Durable.start("replica", url, sideFile)
        const [b, c] = yield* Effect.all([
          Durable.start("replica", url, sideFile),
          Durable.start("replica", url, sideFile)
        ], { concurrency: "unbounded" })
        const task = yield* Durable.send(a, { kills: ["2:after"], gate, stepMs: 100 })
        // C's subscriber holds the task before the run takes its first step.
        const subscription = c.client.resubscribeTask({ id: task.id, tenant: "" })
        const head = (yield* Effect.promise(() => subscription.next())).value as StreamResponse
        expect(head.payload?.$case).toBe("task")
        const rest = collect(subscription)
        // Read below, once the run is over; a stream that failed before then fails the test there.
        rest.catch(() => {})
        fs.writeFileSync(gate, "")
        const exit = yield* Durable.death(a)
        const died = Date.now()
        expect(exit.signal).toBe("SIGKILL")
        // Another replica takes the run over once A's claim lapsed (lease 2 s, sweep 0.3 s) and does step 2 again.
        yield* Durable.noted(sideFile, task.id, "enter2", 2, 15_000)
        const takeover = Date.now() - died
        const events = yield* Effect.promise(() => rest)
        const end = yield* Durable.until(b, task.id, ended)
        expect(end.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
        expect(Durable.statusText(end)).toBe("done")
        // Step 1 once; step 2 twice, as A died between its side effect and its record (at least once); step 3 once.
        expect(Durable.sideEffects(sideFile, task.id)).toEqual([1, 2, 1])
        expect(takeover).toBeLessThan(10_000)

        const shapes = events.map(shapeOf)
        // Every event once, in order, though the run was started twice: the agent's (each with its place in the
        // run, rising), then the end.
        expect(shapes.map((shape) => shape.line)).toEqual([
          "TASK_STATE_WORKING step 1 done",
          "TASK_STATE_WORKING step 2 done",
          `TASK_STATE_WORKING {"step":2}`,
          "TASK_STATE_WORKING step 3 done",
          "artifact report",
          "TASK_STATE_COMPLETED done"
        ])
        const places = shapes.slice(0, -1).map((shape) => shape.place)
        expect(places.every((place) => typeof place === "number"), JSON.stringify(places)).toBe(true)
        expect(places.every((place, i) => i === 0 || place! > places[i - 1]!), JSON.stringify(places)).toBe(true)
        // One numbered stream, right after the Task the subscriber got first.
        const seqs = shapes.map((shape) => shape.seq!)
        expect(seqs).toEqual(seqs.map((_, i) => EventId.sequenceOf(head)! + 1 + i))
        // The log read whole on B is what C's subscriber saw.
        const whole = yield* Effect.promise(() =>
          collect(b.client.resubscribeTask({ id: task.id, tenant: "" }, {
            serviceParameters: { "Last-Event-ID": "0" }
          }))
        )
        const after = whole.filter((event) => (EventId.sequenceOf(event) ?? 0) > EventId.sequenceOf(head)!)
        expect(after.map(shapeOf)).toEqual(shapes)
      }),
    90_000
  )

  it.scopedLive(
    "a single server on PostgreSQL, killed between two steps, resumes the run at its next start",
    () =>
      Effect.gen(function*() {
        const { sideFile, url } = yield* workspace
        const servers = yield* Durable.lineage("pg", url, sideFile)
        const task: Task = yield* Durable.send(servers.current(), { kills: ["1:between", "2:before"] })
        const { deaths, task: end } = yield* Durable.through(servers, task.id, ended)
        expect(deaths).toBe(2)
        expect(end.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
        expect(Durable.sideEffects(sideFile, task.id)).toEqual([1, 1, 1])
        expect(Durable.linesOf(sideFile, task.id).filter((line) => line === "enter1")).toHaveLength(1)
      }),
    60_000
  )
})
