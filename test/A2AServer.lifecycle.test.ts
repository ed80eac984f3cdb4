/**
 * The server's first and last moments, as peers see them on fresh
 * connections: from the first connection it accepts, every request is
 * answered; while it shuts down, a new request is refused (503 and
 * `Retry-After`, gRPC's UNAVAILABLE) on a port still open, and the runs in
 * flight finish.
 */
import { TaskState } from "@a2a-js/sdk"
import { ClientFactory } from "@a2a-js/sdk/client"
import { GrpcTransportFactory } from "@a2a-js/sdk/client/grpc"
import { GRPC_STATUS_CODE } from "@a2a-js/sdk/errors/grpc"
import { A2AService } from "@a2a-js/sdk/server/grpc"
import { describe, expect, it } from "@effect/vitest"
import * as Grpc from "@grpc/grpc-js"
import { Deferred, Effect, Exit, Fiber, Option, Scope } from "effect"
import * as Fs from "node:fs"
import * as Http from "node:http"
import * as net from "node:net"
import * as Os from "node:os"
import * as Path from "node:path"
import * as A2AServer from "../src/A2AServer.js"
import * as AgentExecutor from "../src/AgentExecutor.js"
import { eventually, makeClient, sendMessage, textOf, userMessage } from "./fixtures/serverAgents.js"

const card = { name: "lifecycle-test", description: "A2AServer's first and last moments" }

const answered = AgentExecutor.completedText("finished")

const databaseFile = Effect.acquireRelease(
  Effect.sync(() => Fs.mkdtempSync(Path.join(Os.tmpdir(), "a2a-lifecycle-"))),
  (directory) => Effect.sync(() => Fs.rmSync(directory, { recursive: true, force: true }))
).pipe(Effect.map((directory) => Path.join(directory, "tasks.db")))

/** A port free now: the test must know it before the server binds it, to call the server while it starts. */
const freePort = Effect.async<number>((resume) => {
  const server = net.createServer()
  server.listen(0, "127.0.0.1", () => {
    const { port } = server.address() as net.AddressInfo
    server.close(() => resume(Effect.succeed(port)))
  })
})

type Outcome<A> =
  | { readonly _tag: "Refused" }
  /** Connected, then closed by the server without an answer. */
  | { readonly _tag: "Closed" }
  | { readonly _tag: "Unanswered" }
  | { readonly _tag: "Answered"; readonly answer: A }

interface HttpAnswer {
  readonly status: number
  readonly retryAfter: string | undefined
  readonly body: string
}

// Long enough for a server held up by a loaded machine, short of the test's own timeout.
const patience = "20 seconds"

const unanswered = { _tag: "Unanswered" } as const

/** One request on a connection of its own (no pool, no keep-alive), as a load balancer's probe or a new client. */
const httpCall = (port: number, method: string, path: string, body?: string): Effect.Effect<Outcome<HttpAnswer>> =>
  Effect.async<Outcome<HttpAnswer>>((resume) => {
    const headers = body === undefined ? {} : { "content-type": "application/json", "a2a-version": "1.0" }
    const request = Http.request({ host: "127.0.0.1", port, method, path, headers, agent: false }, (response) => {
      const chunks: Array<Buffer> = []
      response.on("data", (chunk: Buffer) => chunks.push(chunk))
      response.on("end", () =>
        resume(Effect.succeed({
          _tag: "Answered",
          answer: {
            status: response.statusCode ?? 0,
            retryAfter: response.headers["retry-after"],
            body: Buffer.concat(chunks).toString()
          }
        })))
    })
    request.on("error", (error: NodeJS.ErrnoException) =>
      resume(Effect.succeed(
        error.code === "ECONNREFUSED"
          ? { _tag: "Refused" }
          : error.code === "ECONNRESET"
          ? { _tag: "Closed" }
          : unanswered
      )))
    request.end(body)
    return Effect.sync(() => request.destroy())
  }).pipe(Effect.timeoutTo({ duration: patience, onTimeout: () => unanswered, onSuccess: (outcome) => outcome }))

interface GrpcAnswer {
  readonly code: number
  readonly details: string
  readonly retryAfter: ReadonlyArray<Grpc.MetadataValue>
}

/** `GetTask` of a task that does not exist, on a channel of its own. */
const grpcCall = (port: number): Effect.Effect<Outcome<GrpcAnswer>> =>
  Effect.acquireUseRelease(
    Effect.sync(() => new Grpc.Client(`127.0.0.1:${port}`, Grpc.credentials.createInsecure())),
    (client) =>
      Effect.async<Outcome<GrpcAnswer>>((resume) => {
        const metadata = new Grpc.Metadata()
        metadata.set("a2a-version", "1.0")
        const { path, requestSerialize, responseDeserialize } = A2AService.getTask
        const request = { tenant: "", id: "nope", historyLength: undefined }
        const deadline = Date.now() + 20_000
        client.makeUnaryRequest(
          path,
          requestSerialize,
          responseDeserialize,
          request,
          metadata,
          { deadline },
          (error) => {
            if (error === null) {
              return resume(Effect.succeed({ _tag: "Answered", answer: { code: 0, details: "", retryAfter: [] } }))
            }
            // Nothing listening: grpc-js fails the call UNAVAILABLE, in words of its own.
            if (error.code === GRPC_STATUS_CODE.UNAVAILABLE && error.details.startsWith("No connection established")) {
              return resume(Effect.succeed({ _tag: "Refused" }))
            }
            if (error.code === GRPC_STATUS_CODE.DEADLINE_EXCEEDED) return resume(Effect.succeed(unanswered))
            resume(Effect.succeed({
              _tag: "Answered",
              answer: { code: error.code, details: error.details, retryAfter: error.metadata.get("retry-after") }
            }))
          }
        )
      }),
    (client) => Effect.sync(() => client.close())
  )

/**
 * Sends `probe` anew every 2 ms while `starting` runs, and for 50 ms after,
 * each on a new connection: the outcomes, with whether each was sent before
 * the server was up.
 */
const whileStarting = <A, E>(starting: Fiber.Fiber<unknown, E>, probe: Effect.Effect<Outcome<A>>) =>
  Effect.gen(function*() {
    const probes: Array<Fiber.Fiber<{ readonly outcome: Outcome<A>; readonly early: boolean }>> = []
    let upAt: number | undefined
    for (let i = 0; i < 1_000 && (upAt === undefined || Date.now() - upAt < 50); i++) {
      const early = Option.isNone(yield* Fiber.poll(starting))
      if (!early) upAt ??= Date.now()
      probes.push(yield* Effect.fork(Effect.map(probe, (outcome) => ({ outcome, early }))))
      yield* Effect.sleep("2 millis")
    }
    return yield* Fiber.joinAll(probes)
  })

describe("A2AServer's lifecycle", () => {
  it.scopedLive(
    "from the first connection it accepts, every request is answered: the card, JSON-RPC and gRPC",
    () =>
      Effect.gen(function*() {
        const port = yield* freePort
        const grpcPort = yield* freePort
        const starting = yield* Effect.forkScoped(
          A2AServer.make({
            agent: () => Effect.succeed(answered),
            card,
            port,
            grpc: { port: grpcPort },
            // A store that takes a while to open, as a database does: the server's start takes turns of the event loop.
            taskStore: A2AServer.TaskStoreConfig.Sqlite({ filename: yield* databaseFile })
          })
        )
        const getTask = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "GetTask", params: { id: "nope" } })
        const [cards, rpcs, grpcs] = yield* Effect.all([
          whileStarting(starting, httpCall(port, "GET", A2AServer.cardPath)),
          whileStarting(starting, httpCall(port, "POST", "/a2a/jsonrpc", getTask)),
          whileStarting(starting, grpcCall(grpcPort))
        ], { concurrency: "unbounded" })
        yield* Fiber.join(starting)

        // Every probe is refused (nothing listened yet) or answered as a server that is up answers it.
        const wrong = <A>(probes: ReadonlyArray<{ readonly outcome: Outcome<A> }>, right: (answer: A) => boolean) =>
          probes.flatMap(({ outcome }) =>
            outcome._tag === "Unanswered" || (outcome._tag === "Answered" && !right(outcome.answer)) ? [outcome] : []
          )
        expect({
          card: wrong(cards, (answer) => answer.status === 200 && JSON.parse(answer.body).name === card.name),
          jsonRpc: wrong(rpcs, (answer) => answer.status === 200 && JSON.parse(answer.body).error?.code === -32001),
          grpc: wrong(grpcs, (answer) => answer.code === GRPC_STATUS_CODE.NOT_FOUND)
        }).toEqual({ card: [], jsonRpc: [], grpc: [] })
        // Some probes connected while the server was still starting: the moments that matter were exercised.
        const connectedEarly = <A>(probes: ReadonlyArray<{ readonly outcome: Outcome<A>; readonly early: boolean }>) =>
          probes.some(({ early, outcome }) => early && outcome._tag === "Answered")
        expect([connectedEarly(cards), connectedEarly(rpcs), connectedEarly(grpcs)]).toEqual([true, true, true])
      }),
    60_000
  )

  it.live("a start that fails closes the connections it held: none is left waiting", () =>
    Effect.gen(function*() {
      const port = yield* freePort
      const starting = yield* Effect.fork(Effect.scoped(A2AServer.make({
        agent: () => Effect.succeed(answered),
        card,
        port,
        // Refused once the port is bound (a SQLite store needs a file), after gRPC's packages have loaded.
        taskStore: A2AServer.TaskStoreConfig.Sqlite({ filename: ":memory:" })
      })))
      const probes = yield* whileStarting(starting, httpCall(port, "GET", A2AServer.cardPath))
      const failed = yield* Effect.flip(Fiber.join(starting))
      expect(failed._tag).toBe("TaskStoreError")
      expect(probes.filter(({ outcome }) => outcome._tag !== "Refused" && outcome._tag !== "Closed")).toEqual([])
      expect(probes.some(({ outcome }) => outcome._tag === "Closed")).toBe(true)
    }), 60_000)

  it.live(
    "while it shuts down, a new request is refused (503 and Retry-After, gRPC UNAVAILABLE) on a port still open, and the runs in flight finish",
    () =>
      Effect.gen(function*() {
        const release = yield* Deferred.make<void>()
        let running = 0
        const agent: AgentExecutor.Agent = () =>
          Effect.zipRight(Effect.sync(() => running++), Effect.as(Deferred.await(release), answered))
        const scope = yield* Scope.make()
        const server = yield* Scope.extend(A2AServer.make({ agent, card, shutdownTimeout: "10 seconds" }), scope)
        const port = server.address.port
        const grpcPort = Number(server.urls.GRPC!.split(":").at(-1))
        // A run in flight on each side: a blocking send by JSON-RPC, one by gRPC.
        const grpcClient = yield* Effect.promise(() =>
          new ClientFactory({ transports: [new GrpcTransportFactory()] }).createFromUrl(server.url)
        )
        const inFlight = yield* Effect.fork(Effect.all([
          sendMessage(yield* makeClient(server.url), userMessage("slow")),
          sendMessage(grpcClient, userMessage("slow"))
        ], { concurrency: "unbounded" }))
        yield* eventually(Effect.sync(() => running), (count) => count === 2)

        const closing = yield* Effect.fork(Scope.close(scope, Exit.void))
        const began = Date.now()
        const message = (text: string) => ({ messageId: crypto.randomUUID(), role: "ROLE_USER", parts: [{ text }] })
        const calls = Effect.all({
          card: httpCall(port, "GET", A2AServer.cardPath),
          jsonRpc: httpCall(
            port,
            "POST",
            "/a2a/jsonrpc",
            JSON.stringify({
              jsonrpc: "2.0",
              id: 1,
              method: "SendMessage",
              params: { message: message("new") }
            })
          ),
          rest: httpCall(port, "POST", "/a2a/rest/message:send", JSON.stringify({ message: message("new") })),
          grpc: grpcCall(grpcPort)
        }, { concurrency: "unbounded" })
        const refusals: Array<Effect.Effect.Success<typeof calls>> = []
        for (const at of [0, 5, 200]) {
          yield* Effect.sleep(`${Math.max(0, began + at - Date.now())} millis`)
          refusals.push(yield* calls)
        }
        yield* Deferred.succeed(release, void 0)
        const finished = yield* Fiber.join(inFlight)
        yield* Fiber.join(closing)

        // Each as a load balancer reads it: try elsewhere, or here again later.
        const refusal = (answer: Outcome<HttpAnswer>, code: (body: string) => unknown) =>
          answer._tag === "Answered"
            ? { status: answer.answer.status, retryAfter: answer.answer.retryAfter, code: code(answer.answer.body) }
            : answer
        expect(refusals.map(({ card, grpc, jsonRpc, rest }) => ({
          card: refusal(card, (body) => body),
          jsonRpc: refusal(jsonRpc, (body) => JSON.parse(body).error?.code),
          rest: refusal(rest, (body) => JSON.parse(body).error?.status),
          grpc
        }))).toEqual([0, 5, 200].map(() => ({
          card: { status: 503, retryAfter: "1", code: "The server is shutting down." },
          jsonRpc: { status: 503, retryAfter: "1", code: -32004 },
          rest: { status: 503, retryAfter: "1", code: "UNAVAILABLE" },
          grpc: {
            _tag: "Answered",
            answer: { code: GRPC_STATUS_CODE.UNAVAILABLE, details: "The server is shutting down.", retryAfter: ["1"] }
          }
        })))
        expect(finished.map((task) => [task.status?.state, textOf(task)])).toEqual([
          [TaskState.TASK_STATE_COMPLETED, "finished"],
          [TaskState.TASK_STATE_COMPLETED, "finished"]
        ])
        // Once they have, the ports are closed.
        expect(yield* httpCall(port, "GET", A2AServer.cardPath)).toEqual({ _tag: "Refused" })
        expect(yield* grpcCall(grpcPort)).toEqual({ _tag: "Refused" })
      }),
    60_000
  )
})
