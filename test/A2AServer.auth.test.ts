import { type Task, TaskState } from "@a2a-js/sdk"
import { ClientFactory } from "@a2a-js/sdk/client"
import { ServerCallContext } from "@a2a-js/sdk/server"
import * as NodeSdk from "@effect/opentelemetry/NodeSdk"
import { describe, expect, it } from "@effect/vitest"
import { InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base"
import { Effect, FastCheck, Option, Redacted, type Scope } from "effect"
import * as Fs from "node:fs"
import * as Http from "node:http"
import * as Os from "node:os"
import * as Path from "node:path"
import * as A2AServer from "../src/A2AServer.js"
import * as Authentication from "../src/Authentication.js"
import * as IdempotencyLedger from "../src/IdempotencyLedger.js"
import * as internalAuthentication from "../src/internal/server/caller/authentication.js"
import * as internalIdempotencyEntry from "../src/internal/server/idempotency/idempotencyEntry.js"
import * as internalMakeStore from "../src/internal/server/store/makeStore.js"
import * as internalStore from "../src/internal/server/store/store.js"
import * as internalTaskStore from "../src/internal/server/store/taskStore.js"
import * as Observability from "../src/Observability.js"
import {
  callerOn,
  counter,
  factoryOf,
  keyOf,
  keys,
  othersSeeNothing,
  reasonOf,
  type Result,
  serve,
  taskOf,
  tasksOf,
  transports,
  untouched,
  wrongKey
} from "./fixtures/callers.js"
import { captureLogs, eventually, keyed, makeClient, post, sendMessage, userMessage } from "./fixtures/serverAgents.js"

describe("A2AServer with authenticate", () => {
  it.scopedLive("no or wrong credentials: 401 with WWW-Authenticate, or UNAUTHENTICATED, on every transport, and nothing runs", () =>
    Effect.gen(function*() {
      const { runs, server } = yield* serve()
      const answers: Array<string> = []
      for (const transport of transports) {
        for (const key of [undefined, wrongKey]) {
          const caller = yield* callerOn(server.url, transport, key)
          const sent = yield* caller.send("hello")
          expect("error" in sent, `${transport} ${key}`).toBe(true)
          if ("error" in sent) answers.push(String(sent.error), JSON.stringify(sent.error))
          const listed = yield* caller.list()
          expect("error" in listed).toBe(true)
        }
      }
      // The wire, as any client reads it.
      const rpc = yield* post(
        server.rpcUrl,
        JSON.stringify({ jsonrpc: "2.0", id: 1, method: "SendMessage", params: {} }),
        {
          "a2a-version": "1.0"
        }
      )
      expect(rpc.status).toBe(401)
      expect(rpc.headers.get("www-authenticate")).toBe("Bearer")
      expect(rpc.text).toBe("Authentication required.")
      const rest = yield* post(`${server.urls["HTTP+JSON"]}/message:send`, "{}", { "x-api-key": wrongKey })
      expect(rest.status).toBe(401)
      expect(rest.headers.get("www-authenticate")).toBe("Bearer")
      expect(JSON.parse(rest.text)).toEqual({
        error: {
          code: 401,
          status: "UNAUTHENTICATED",
          message: "Invalid credentials.",
          details: [{
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            reason: "UNAUTHENTICATED",
            domain: "effect-a2a"
          }]
        }
      })
      const grpc = yield* callerOn(server.url, "GRPC", undefined)
      const refused = yield* grpc.get("any")
      expect((refused as { error: { status?: number } }).error.status).toBe(16)
      // The extended card needs credentials; the card does not.
      const extended = yield* Effect.promise(() =>
        fetch(`${server.urls["HTTP+JSON"]}/extendedAgentCard`).then((r) => r.status)
      )
      expect(extended).toBe(401)
      const card = yield* Effect.promise(() => fetch(`${server.url}${A2AServer.cardPath}`).then((r) => r.status))
      expect(card).toBe(200)
      expect(runs).toEqual([])
      answers.push(rpc.text, rest.text)
      for (const answer of answers) expect(answer).not.toContain(wrongKey)
      expect(yield* counter(Observability.serverUnauthenticated, server.card.name)).toBeGreaterThanOrEqual(13)
    }))

  it.scopedLive("a refused request's body is not read: the 401 closes the connection", () =>
    Effect.gen(function*() {
      const { server } = yield* serve()
      for (const url of [server.rpcUrl, `${server.urls["HTTP+JSON"]}/message:send`]) {
        const answer = yield* Effect.async<{ readonly status: number; readonly connection: string | undefined }>(
          (resume) => {
            const request = Http.request(
              url,
              { method: "POST", headers: { "content-type": "application/json" } },
              (response) => {
                response.resume()
                resume(Effect.succeed({ status: response.statusCode ?? 0, connection: response.headers.connection }))
              }
            )
            request.on("error", () => undefined)
            // A body that would never end: only the server's close stops it.
            const chunk = Buffer.alloc(64 * 1024, 32)
            const pump = () => {
              while (!request.destroyed && request.write(chunk));
            }
            request.on("drain", pump)
            pump()
            return Effect.sync(() => request.destroy())
          }
        ).pipe(Effect.timeout("10 seconds"))
        expect(answer).toEqual({ status: 401, connection: "close" })
      }
    }))

  it.scopedLive("the caller reaches the agent, its runs' logs (never its key) and the per-caller bound", () =>
    Effect.gen(function*() {
      const logs = captureLogs()
      const { runs, server } = yield* serve({ maxInFlightPerCaller: 1 }).pipe(Effect.provide(logs.layer))
      for (const transport of transports) {
        const a = yield* callerOn(server.url, transport, keyOf("a"))
        expect(taskOf(yield* a.send("hello")).status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
      }
      expect(runs.map((run) => run.caller)).toEqual(["a", "a", "a"])
      const working = logs.lines.filter((line) => line.message === "working")
      expect(working).toHaveLength(3)
      for (const line of working) expect(line.annotations.caller).toBe("a")
      // One run at a time per caller: a's second concurrent send is shed, b's is not.
      const a = yield* callerOn(server.url, "JSONRPC", keyOf("a"))
      const b = yield* callerOn(server.url, "JSONRPC", keyOf("b"))
      const waiting = taskOf(yield* a.send("wait"))
      expect(waiting.status?.state).toBe(TaskState.TASK_STATE_WORKING)
      expect(reasonOf(yield* a.send("hello"))).toMatch(/429/)
      expect(taskOf(yield* b.send("hello")).status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
      const seen = JSON.stringify(logs.lines)
      for (const key of [...Object.keys(keys), wrongKey]) expect(seen).not.toContain(key)
    }))

  it.scopedLive("an authenticator that dies, or answers a caller without an id, is a 500 with an error id, its cause logged", () =>
    Effect.gen(function*() {
      const logs = captureLogs()
      const broken: Authentication.Authenticator = (request) =>
        request.headers["x-api-key"] === "empty"
          ? Effect.succeed({ id: "", name: "nobody" })
          : Effect.die(new Error("the key server is down"))
      const { runs, server } = yield* serve({ authenticate: broken }).pipe(Effect.provide(logs.layer))
      for (const key of [wrongKey, "empty"]) {
        const rpc = yield* post(server.rpcUrl, "{}", { "x-api-key": key })
        expect(rpc.status).toBe(500)
        const errorId = /error_id: ([0-9a-f]{12})/.exec(JSON.parse(rpc.text).error.message)?.[1]
        const logged = logs.lines.find((line) => line.annotations.errorId === errorId)
        expect(logged?.message).toBe("Authentication failed unexpectedly")
        expect(String(logged?.annotations.cause)).toMatch(key === "empty" ? /without an id/ : /the key server is down/)
      }
      const rest = yield* post(`${server.urls["HTTP+JSON"]}/message:send`, "{}", { "x-api-key": wrongKey })
      expect(rest.status).toBe(500)
      expect(rest.text).not.toContain("key server")
      const grpc = yield* callerOn(server.url, "GRPC", wrongKey)
      expect((yield* grpc.get("any") as Effect.Effect<{ readonly error: { readonly status: number } }>).error.status)
        .toBe(13)
      expect(runs).toEqual([])
    }))

  it.scopedLive("leak property: no API key, right or wrong, appears in any answer or log line, on any transport", () =>
    Effect.gen(function*() {
      const logs = captureLogs()
      const samples = FastCheck.sample(
        FastCheck.record({
          right: FastCheck.stringMatching(/^[A-Za-z0-9_.:;'/+=-]{16,48}$/),
          wrong: FastCheck.stringMatching(/^[A-Za-z0-9_.:;'/+=-]{16,48}$/)
        }).filter(({ right, wrong }) => right !== wrong && !right.includes(wrong) && !wrong.includes(right)),
        8
      )
      const { server } = yield* serve({
        authenticate: Authentication.apiKey({
          keys: samples.map(({ right }, i) => [`caller-${i}`, Redacted.make(right)] as const)
        })
      }).pipe(Effect.provide(logs.layer))
      const answers: Array<string> = []
      for (const [i, { right, wrong }] of samples.entries()) {
        for (const transport of transports) {
          const good = yield* callerOn(server.url, transport, right)
          const bad = yield* callerOn(server.url, transport, wrong)
          for (const text of ["hello", "fail"]) {
            const sent = yield* good.send(text)
            expect(reasonOf(sent), `${transport} caller-${i}`).toBe("ok")
            answers.push(JSON.stringify(sent, (_key, value) => typeof value === "bigint" ? String(value) : value))
            const refused = yield* bad.send(text)
            answers.push(String((refused as { error: unknown }).error))
          }
        }
      }
      const logged = JSON.stringify(logs.lines)
      for (const { right, wrong } of samples) {
        for (const answer of answers) {
          expect(answer).not.toContain(right)
          expect(answer).not.toContain(wrong)
        }
        expect(logged).not.toContain(right)
        expect(logged).not.toContain(wrong)
      }
      expect(logs.lines.some((line) => line.message === "Request refused: not authenticated")).toBe(true)
    }))

  it.scopedLive("the caller's id is its run's span attribute; a key in a header of the authenticator's own is in no span and not in the agent's headers", () => {
    const exporter = new InMemorySpanExporter()
    return Effect.gen(function*() {
      const key = "agent-key-4d9c1b77e0"
      const { runs, server } = yield* serve({
        authenticate: Authentication.apiKey({ header: "X-Agent-Key", keys: { a: Redacted.make(key) } })
      })
      for (const transport of transports) {
        const client = yield* Effect.promise(() =>
          new ClientFactory({ transports: [factoryOf(transport)] }).createFromUrl(server.url)
        )
        const task = (yield* Effect.promise(() =>
          client.sendMessage({ tenant: "", message: userMessage("hello"), configuration: undefined, metadata: {} }, {
            serviceParameters: { "x-agent-key": key }
          })
        )) as Task
        const execute = exporter.getFinishedSpans().find((span) =>
          span.name === Observability.executeSpanName && span.attributes["a2a.task_id"] === task.id
        )
        expect(execute?.attributes["a2a.caller"], transport).toBe("a")
      }
      expect(exporter.getFinishedSpans().some((span) => span.name.startsWith("http.server"))).toBe(true)
      for (const span of exporter.getFinishedSpans()) expect(JSON.stringify(span.attributes)).not.toContain(key)
      expect(runs).toHaveLength(3)
      for (const run of runs) {
        expect(run.caller).toBe("a")
        expect(JSON.stringify(run.headers)).not.toContain(key)
      }
    }).pipe(Effect.provide(NodeSdk.layer(() => ({ spanProcessor: new SimpleSpanProcessor(exporter) }))))
  })

  it.effect("the idempotency sweep records a task its replica left under the entry's caller, where only that caller finds it", () =>
    Effect.gen(function*() {
      const native = yield* internalMakeStore.make(internalTaskStore.defaultConfig)
      const store = internalStore.toSdk(native, yield* Effect.runtime<never>())
      const taskId = crypto.randomUUID()
      yield* internalIdempotencyEntry.expiring(native)({
        key: "order-17",
        identity: { tenant: "", user: "a" },
        fingerprint: "f",
        taskId,
        state: "running",
        result: Option.none(),
        leaseOwner: Option.some("gone"),
        leaseExpiresAt: Option.some(0),
        createdAt: 0,
        finishedAt: Option.none()
      })
      const as = (id: string) =>
        new ServerCallContext({ user: new internalAuthentication.CallerUser({ id, name: id }) })
      const found = yield* Effect.promise(() => store.load(taskId, as("a")))
      expect(found?.status?.state).toBe(TaskState.TASK_STATE_FAILED)
      expect(yield* Effect.promise(() => store.load(taskId, as("b")))).toBeUndefined()
    }).pipe(Effect.scoped))

  it.scopedLive("an idempotency key is the caller's own: another caller's same key runs its own task", () =>
    Effect.gen(function*() {
      const { runs, server } = yield* serve({ idempotency: {} }).pipe(Effect.provide(IdempotencyLedger.layerMemory()))
      const client = yield* makeClient(server.url)
      const keyedAs = (caller: string) =>
        sendMessage(client, keyed("hello", "order-17"), { "x-api-key": keyOf(caller) })
      const first = yield* keyedAs("a")
      const again = yield* keyedAs("a")
      const other = yield* keyedAs("b")
      expect(again.id).toBe(first.id)
      expect(other.id).not.toBe(first.id)
      expect(runs.map((run) => run.caller)).toEqual(["a", "b"])
      // A keyed message to a's running task is not told that it runs: the answer is the one for no task.
      const running = taskOf(yield* (yield* callerOn(server.url, "JSONRPC", keyOf("a"))).send("wait"))
      for (const transport of transports) {
        const b = yield* callerOn(server.url, transport, keyOf("b"))
        const continued = yield* Effect.promise(() =>
          b.client.sendMessage({
            tenant: "",
            message: keyed("more", `k-${transport}`, { taskId: running.id }),
            configuration: undefined,
            metadata: {}
          }, b.options).then(() => "ok", (error: { reason?: string }) => error.reason)
        )
        expect(continued, transport).toBe("TASK_NOT_FOUND")
      }
    }))
})

const sqliteFile = (): Effect.Effect<string, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.sync(() => Path.join(Fs.mkdtempSync(Path.join(Os.tmpdir(), "a2a-auth-")), "tasks.db")),
    (file) => Effect.sync(() => Fs.rmSync(Path.dirname(file), { recursive: true, force: true }))
  )

describe("A2AServer with authenticate: each caller sees only its own tasks", () => {
  for (const store of ["Memory", "Sqlite"] as const) {
    it.scopedLive(`${store} store: another caller gets TaskNotFound on every operation and transport; the owner's tasks are untouched`, () =>
      Effect.gen(function*() {
        const taskStore = store === "Memory"
          ? A2AServer.TaskStoreConfig.Memory({})
          : A2AServer.TaskStoreConfig.Sqlite({ filename: yield* sqliteFile() })
        const logs = captureLogs()
        const { runs, server } = yield* serve({ taskStore }).pipe(Effect.provide(logs.layer))
        const tasks = yield* tasksOf(server.url)
        const ranBefore = runs.length
        for (const transport of transports) yield* othersSeeNothing(server.url, server.rpcUrl, transport, tasks)
        expect(runs.length).toBe(ranBefore)
        yield* untouched(server.url, tasks)
        // Each miss on a's tasks is counted and logged as such; a miss on no one's task is not.
        const forbidden = yield* eventually(
          counter(Observability.serverForbidden, server.card.name),
          (count) => count >= 3 * 3 * 3
        )
        expect(forbidden).toBeGreaterThanOrEqual(27)
        const warned = logs.lines.filter((line) =>
          line.message === "Request on another caller's task, answered as not found"
        )
        expect(new Set(warned.map((line) => line.annotations.caller))).toEqual(new Set(["b"]))
      }))
  }

  it.scopedLive("property: no operation by one caller ever returns or changes another caller's task", () =>
    Effect.gen(function*() {
      const { server } = yield* serve()
      const callers = ["a", "b", "c"] as const
      type Operation = "get" | "cancel" | "continue" | "subscribe" | "list"
      const clients = new Map<string, Effect.Effect.Success<ReturnType<typeof callerOn>>>()
      for (const caller of callers) {
        for (const transport of transports) {
          clients.set(`${caller} ${transport}`, yield* callerOn(server.url, transport, keyOf(caller)))
        }
      }
      yield* Effect.promise(() =>
        FastCheck.assert(
          FastCheck.asyncProperty(
            FastCheck.constantFrom(...callers),
            FastCheck.constantFrom(...callers),
            FastCheck.constantFrom<Operation>("get", "cancel", "continue", "subscribe", "list"),
            FastCheck.constantFrom(...transports),
            FastCheck.constantFrom(...transports),
            FastCheck.constantFrom("hello", "ask"),
            async (owner, other, operation, ownerTransport, transport, text) => {
              const mine = clients.get(`${owner} ${ownerTransport}`)!
              const theirs = clients.get(`${other} ${transport}`)!
              const task = taskOf(await Effect.runPromise(mine.send(text)))
              const before = taskOf(await Effect.runPromise(mine.get(task.id)))
              const answer: Result<unknown> = await Effect.runPromise<Result<unknown>, never>(
                operation === "get"
                  ? theirs.get(task.id)
                  : operation === "cancel"
                  ? theirs.cancel(task.id)
                  : operation === "continue"
                  ? theirs.send("more", task.id)
                  : operation === "subscribe"
                  ? theirs.subscribe(task.id)
                  : theirs.list()
              )
              // The owner finds it on the other's transport too: the caller is the same on every transport.
              const after = taskOf(await Effect.runPromise(clients.get(`${owner} ${transport}`)!.get(task.id)))
              if (owner !== other) {
                // Nothing of the task comes back, and the task is as it was.
                expect(JSON.stringify("ok" in answer ? answer.ok : null)).not.toContain(task.id)
                if (operation !== "list") expect(reasonOf(answer)).toBe("TASK_NOT_FOUND")
                expect(after.status?.state).toBe(before.status?.state)
                expect(after.history).toHaveLength(before.history.length)
              } else if (operation === "get") {
                expect(reasonOf(answer)).toBe("ok")
              }
            }
          ),
          { numRuns: 40 }
        )
      )
    }))
})
