/**
 * Our client resumes a cut stream with its cursor: two replicas on one task
 * store and one event log, reached through a proxy that cuts the caller's
 * connection mid-run and then leads to the other replica. The caller's
 * `RemoteAgent.stream` shows every event once, in order, then the outcome,
 * through one `SubscribeToTask` with `Last-Event-ID` and no `GetTask`; where
 * the card does not declare the extension, or the resume is refused, one
 * `GetTask` recovers the end, as before.
 */
import { InMemoryTaskStore } from "@a2a-js/sdk/server"
import { describe, expect, it } from "@effect/vitest"
import { Chunk, type Context, Effect, FastCheck, Option, Queue, Stream } from "effect"
import * as A2AServer from "../src/A2AServer.js"
import * as AgentExecutor from "../src/AgentExecutor.js"
import * as EventId from "../src/internal/wire/eventId.js"
import * as Part from "../src/Part.js"
import * as RemoteAgent from "../src/RemoteAgent.js"
import type * as RemoteEvent from "../src/RemoteEvent.js"
import { databaseUrl } from "./fixtures/databaseUrl.js"
import * as FaultProxy from "./fixtures/faultProxy.js"
import { cardFor, closedPort, json, rawPeer } from "./fixtures/peers.js"

/** Each step waits for a permit, so that the run is never more than one event ahead of its caller. */
const steppedAgent = (permits: Queue.Queue<void>): AgentExecutor.Agent<never> => (request) =>
  Effect.gen(function*() {
    const steps = Number(/^steps (\d+)$/.exec(Part.textOf(request.message.parts))?.[1] ?? "3")
    for (let i = 1; i <= steps; i++) {
      yield* Queue.take(permits)
      yield* AgentExecutor.status(`step ${i}`)
    }
    return AgentExecutor.completedText(`done after ${steps} steps`)
  })

type Transport = "JSONRPC" | "HTTP+JSON" | "GRPC"

type Replica = "a" | "b" | "c" | "plain"

/** A database of its own on the test run's PostgreSQL, made once: an event log the others' runs never reach. */
let other: Promise<string> | undefined
const otherDatabase = (): Promise<string> =>
  other ??= (async () => {
    const url = new URL(databaseUrl())
    const name = `resume_${crypto.randomUUID().replaceAll("-", "")}`
    // A non-literal specifier: `pg` ships no types of its own.
    const pg = (await import("pg" as string)).default
    const client = new pg.Client({ connectionString: url.toString() })
    await client.connect()
    try {
      await client.query(`create database ${name}`)
    } finally {
      await client.end()
    }
    url.pathname = `/${name}`
    return url.toString()
  })()

/**
 * Replicas `a` and `b` on one task store and one log (`c` on the same store,
 * its own log; `plain` without replication), all behind one proxy (and one
 * for gRPC's own port) that leads to `a` until `to` says otherwise.
 */
const replicas = (transport: Transport) =>
  Effect.gen(function*() {
    const permits = yield* Queue.unbounded<void>()
    const taskStore = new InMemoryTaskStore()
    const servers: Partial<Record<Replica, Context.Tag.Service<A2AServer.A2AServer>>> = {}
    let current: Replica = "a"
    const proxy = yield* FaultProxy.make(() => ({ host: "127.0.0.1", port: servers[current]!.address.port }))
    // The card gives the proxy's address: each replica's own gRPC port is chosen here.
    const grpcPorts: Partial<Record<Replica, number>> = {}
    const grpcProxy = yield* FaultProxy.make(() => ({ host: "127.0.0.1", port: grpcPorts[current]! }))
    const shared = { url: databaseUrl() }
    const serve = (name: Replica, replication: A2AServer.ReplicationOptions | undefined) =>
      Effect.flatMap(closedPort, (free) =>
        A2AServer.make({
          agent: steppedAgent(permits),
          card: { name, description: "a replica" },
          taskStore,
          transports: [transport],
          publicUrl: proxy.url,
          grpc: {
            port: grpcPorts[name] = Number(new URL(free).port),
            publicAddress: grpcProxy.url.replace("http://", "")
          },
          shutdownTimeout: "1 second",
          ...(replication === undefined ? {} : { replication })
        }).pipe(Effect.map((server) => (servers[name] = server))))
    yield* serve("a", shared)
    yield* serve("b", shared)
    yield* serve("c", { url: yield* Effect.promise(otherDatabase) })
    yield* serve("plain", undefined)
    return {
      permits,
      proxy,
      grpcProxy,
      cut: () => {
        proxy.cut()
        grpcProxy.cut()
      },
      to: (name: Replica) => (current = name)
    }
  })

/** What a caller's event says, without the task's ids. */
const shapeOf = (event: RemoteEvent.RemoteEvent): string =>
  event._tag === "Status"
    ? `Status ${event.state} ${event.text}`
    : event._tag === "Finished"
    ? `Finished ${event.outcome._tag} ${"text" in event.outcome ? event.outcome.text : ""}`
    : event._tag

/** The requests callers sent through the proxy: their A2A operation and cursor. */
const requestsOf = (sent: string) =>
  // A request's body runs straight into the next request on the connection.
  sent.split(/(?=(?:GET|POST) \/\S* HTTP\/1\.1\r\n)/).flatMap((request) => {
    const line = /^(GET|POST) (\S+) HTTP/.exec(request)
    if (line === null) return []
    const path = line[2]!
    const operation = path.endsWith(":subscribe")
      ? "SubscribeToTask"
      : line[1] === "GET" && /\/tasks\/[^/:?]+(\?|$)/.test(path)
      ? "GetTask"
      : /"method":"(\w+)"/.exec(request)?.[1] ?? path
    const cursor = new RegExp(`^${EventId.cursorHeader}: (\\d+)\\r$`, "im").exec(request)?.[1]
    return [{ operation, cursor }]
  })

/**
 * A stream of `steps` steps through the proxy, cut (and led to `then`) once
 * the caller saw `at` events, for each of `cuts`; each event the caller sees
 * lets the run go one step on, so that at a cut the server sent exactly the
 * events the caller saw.
 */
const run = (
  setup: Effect.Effect.Success<ReturnType<typeof replicas>>,
  agent: RemoteAgent.RemoteAgent,
  steps: number,
  cuts: ReadonlyArray<{ readonly at: number; readonly then: Replica }>
) => {
  let seen = 0
  let released = 0
  // Exactly one permit per step, none left over for the next run.
  const release = (count: number) => {
    const permits = Math.min(count, steps - released)
    released += permits
    return Queue.offerAll(setup.permits, Array.from({ length: permits }, () => undefined))
  }
  return agent.stream(`steps ${steps}`).pipe(
    Stream.tap(() =>
      Effect.suspend(() => {
        seen += 1
        const cut = cuts.find((cut) => cut.at === seen)
        if (cut === undefined) return release(1)
        setup.cut()
        setup.to(cut.then)
        // Led away from the log, the run may go on to its end: a caller that looks the task up sees none of its steps.
        return release(cut.then === "a" || cut.then === "b" ? 1 : steps)
      })
    ),
    Stream.runCollect,
    Effect.map(Chunk.toArray)
  )
}

const agentAt = (url: string) =>
  RemoteAgent.make({ name: "replicated", url, timeout: "10 seconds", transports: ["JSONRPC", "HTTP+JSON", "GRPC"] })

const expectedShapes = (steps: number) => [
  "Status Working ",
  ...Array.from({ length: steps }, (_, i) => `Status Working step ${i + 1}`),
  `Finished Completed done after ${steps} steps`
]

describe("RemoteAgent resumes a cut stream where the card declares resumption", () => {
  it.each(["JSONRPC", "HTTP+JSON"] as const)(
    "%s: a stream cut mid-run on A resumes on B: every event once, in order, one SubscribeToTask after the last seen, no GetTask",
    (transport) =>
      Effect.runPromise(Effect.scoped(Effect.gen(function*() {
        const setup = yield* replicas(transport)
        const agent = yield* agentAt(setup.proxy.url)
        const uncut = yield* run(setup, agent, 4, [])
        const cutRun = yield* run(setup, agent, 4, [{ at: 3, then: "b" }])
        expect(uncut.map(shapeOf)).toEqual(expectedShapes(4))
        expect(cutRun.map(shapeOf)).toEqual(uncut.map(shapeOf))
        const requests = requestsOf(setup.proxy.sent()).filter((r) =>
          r.operation === "SubscribeToTask" || r.operation === "GetTask"
        )
        // The Task, step 1 and step 2 were seen: the resume asks for what follows the third event.
        expect(requests).toEqual([{ operation: "SubscribeToTask", cursor: "3" }])
      })))
  )

  it.scopedLive("GRPC: a stream cut mid-run on A resumes on B: every event once, in order", () =>
    Effect.gen(function*() {
      const setup = yield* replicas("GRPC")
      const agent = yield* agentAt(setup.proxy.url)
      expect(agent.transport).toBe("GRPC")
      const uncut = yield* run(setup, agent, 4, [])
      const connections = setup.grpcProxy.applied().length
      const cutRun = yield* run(setup, agent, 4, [{ at: 3, then: "b" }])
      expect(uncut.map(shapeOf)).toEqual(expectedShapes(4))
      // The channel was cut, and connected again (to B).
      expect(setup.grpcProxy.applied().length).toBeGreaterThan(connections)
      // A lookup would show none of the steps after the cut; a resume from a wrong place, one twice or none.
      expect(cutRun.map(shapeOf)).toEqual(uncut.map(shapeOf))
    }))

  it("a resumed stream cut again resumes again, after the last event it saw", () =>
    Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const setup = yield* replicas("JSONRPC")
      const agent = yield* agentAt(setup.proxy.url)
      const events = yield* run(setup, agent, 4, [{ at: 2, then: "b" }, { at: 4, then: "a" }])
      expect(events.map(shapeOf)).toEqual(expectedShapes(4))
      const requests = requestsOf(setup.proxy.sent()).filter((r) =>
        r.operation === "SubscribeToTask" || r.operation === "GetTask"
      )
      expect(requests).toEqual([{ operation: "SubscribeToTask", cursor: "2" }, {
        operation: "SubscribeToTask",
        cursor: "4"
      }])
    }))))

  it.each(["JSONRPC", "HTTP+JSON"] as const)(
    "%s: a card without the extension recovers with one GetTask, as before",
    (transport) =>
      Effect.runPromise(Effect.scoped(Effect.gen(function*() {
        const setup = yield* replicas(transport)
        setup.to("plain")
        const agent = yield* agentAt(setup.proxy.url)
        expect(Option.getOrThrow(agent.card).capabilities?.extensions?.map((e) => e.uri) ?? []).not.toContain(
          EventId.resumeExtensionUri
        )
        const events = yield* run(setup, agent, 3, [{ at: 2, then: "plain" }])
        // What came after the cut is not shown; the end is.
        expect(events.map(shapeOf)).toEqual([...expectedShapes(3).slice(0, 2), "Finished Completed done after 3 steps"])
        const operations = requestsOf(setup.proxy.sent()).map((r) => r.operation)
        expect(operations).not.toContain("SubscribeToTask")
        expect(operations).toContain("GetTask")
      })))
  )

  it("a resume the server refuses (a replica without the task's log) falls back to GetTask", () =>
    Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const setup = yield* replicas("JSONRPC")
      const agent = yield* agentAt(setup.proxy.url)
      const events = yield* run(setup, agent, 3, [{ at: 2, then: "c" }])
      expect(events.map(shapeOf)).toEqual([...expectedShapes(3).slice(0, 2), "Finished Completed done after 3 steps"])
      const requests = requestsOf(setup.proxy.sent()).filter((r) =>
        r.operation === "SubscribeToTask" || r.operation === "GetTask"
      )
      expect(requests[0]).toEqual({ operation: "SubscribeToTask", cursor: "2" })
      expect(requests.slice(1).map((r) => r.operation)).toContain("GetTask")
      expect(requests.filter((r) => r.operation === "SubscribeToTask")).toHaveLength(1)
    }))))

  it.scopedLive.prop(
    "cut once or twice after any number of events, the caller's events joined equal the uncut run's",
    [
      FastCheck.integer({ min: 1, max: 5 }),
      FastCheck.uniqueArray(FastCheck.integer({ min: 1, max: 5 }), { minLength: 1, maxLength: 2 }),
      FastCheck.constantFrom<Transport>("JSONRPC", "HTTP+JSON")
    ],
    ([steps, ats, transport]) =>
      Effect.gen(function*() {
        const setup = yield* replicas(transport)
        const agent = yield* agentAt(setup.proxy.url)
        const uncut = yield* run(setup, agent, steps, [])
        // Cut before the last step was seen: the run's end is then never sent before the cut. Each cut leads to the other replica.
        const cutsAt = [...new Set(ats.map((at) => Math.min(at, steps)))].sort((x, y) => x - y)
        const cutRun = yield* run(setup, agent, steps, cutsAt.map((at, i) => ({ at, then: i % 2 === 0 ? "b" : "a" })))
        expect(cutRun.map(shapeOf)).toEqual(uncut.map(shapeOf))
        expect(uncut.map(shapeOf)).toEqual(expectedShapes(steps))
        const resumes = requestsOf(setup.proxy.sent()).filter((r) =>
          r.operation === "SubscribeToTask" || r.operation === "GetTask"
        )
        expect(resumes).toEqual(cutsAt.map((at) => ({ operation: "SubscribeToTask", cursor: String(at) })))
      }),
    { fastCheck: { numRuns: 20 }, timeout: 120_000 }
  )
})

/**
 * A peer of our own script that declares the extension: its stream is cut
 * after two events; its resubscription sends the task's first events again
 * before the later ones (a server that does not heed the cursor), or, with
 * `cutResumes`, is cut before its first.
 */
const scriptedPeer = (cutResumes: boolean) =>
  Effect.gen(function*() {
    const cursors: Array<string | undefined> = []
    const numbered = (seq: number, payload: Record<string, unknown>) => {
      const [kind, value] = Object.entries(payload)[0]!
      return { [kind]: { ...(value as object), metadata: { [EventId.sequenceKey]: seq } } }
    }
    const task = { id: "t1", contextId: "c1", status: { state: "TASK_STATE_WORKING" } }
    const status = (state: string, text: string) => ({
      statusUpdate: {
        taskId: "t1",
        contextId: "c1",
        status: { state, message: { messageId: crypto.randomUUID(), role: "ROLE_AGENT", parts: [{ text }] } }
      }
    })
    const events = [
      { task },
      status("TASK_STATE_WORKING", "step 1"),
      status("TASK_STATE_WORKING", "step 2"),
      status("TASK_STATE_COMPLETED", "done")
    ]
      .map((payload, i) => numbered(i + 1, payload))
    const peer = yield* rawPeer(
      (req, res, body) => {
        const rpc = JSON.parse(body) as { id: number; method: string }
        if (rpc.method === "GetTask") {
          return json(res, 200, {
            jsonrpc: "2.0",
            id: rpc.id,
            result: { ...task, status: { state: "TASK_STATE_COMPLETED" } }
          })
        }
        const sse = (event: unknown) => `data: ${JSON.stringify({ jsonrpc: "2.0", id: rpc.id, result: event })}\n\n`
        if (rpc.method === "SubscribeToTask") {
          cursors.push(req.headers[EventId.cursorHeader] as string | undefined)
          if (cutResumes) return req.socket.destroy()
          res.writeHead(200, { "content-type": "text/event-stream" })
          return res.end(events.map(sse).join(""))
        }
        res.writeHead(200, { "content-type": "text/event-stream" })
        res.write(events.slice(0, 2).map(sse).join(""), () => setTimeout(() => req.socket.destroy(), 50))
      },
      (_req, res, base) => {
        const card = cardFor(`${base}/rpc`)
        json(res, 200, { ...card, capabilities: { ...card.capabilities, extensions: [EventId.resumeExtension] } })
      }
    )
    return { ...peer, cursors }
  })

describe("RemoteAgent resuming a peer of its own script", () => {
  it.scopedLive("events a resubscription sends again are not shown twice", () =>
    Effect.gen(function*() {
      const peer = yield* scriptedPeer(false)
      const agent = yield* agentAt(peer.url)
      const events = Chunk.toArray(yield* Stream.runCollect(agent.stream("go")))
      expect(events.map(shapeOf)).toEqual([
        "Status Working ",
        "Status Working step 1",
        "Status Working step 2",
        "Finished Completed done"
      ])
      expect(peer.methods()).toEqual(["SendStreamingMessage", "SubscribeToTask"])
      expect(peer.cursors).toEqual(["2"])
    }))

  it.scopedLive("a resumption cut every time is tried five times, then one GetTask recovers the end", () =>
    Effect.gen(function*() {
      const peer = yield* scriptedPeer(true)
      const agent = yield* agentAt(peer.url)
      const events = Chunk.toArray(yield* Stream.runCollect(agent.stream("go")))
      expect(events.map(shapeOf)).toEqual(["Status Working ", "Status Working step 1", "Finished Completed "])
      expect(peer.methods()).toEqual([
        "SendStreamingMessage",
        ...Array.from({ length: 5 }, () => "SubscribeToTask"),
        "GetTask"
      ])
      expect(peer.cursors).toEqual(Array.from({ length: 5 }, () => "2"))
    }))
})
