import { type Task, TaskState } from "@a2a-js/sdk"
import { type Client, ClientFactory, JsonRpcTransportFactory, type RequestOptions, RestTransportFactory } from "@a2a-js/sdk/client"
import { GrpcTransportFactory } from "@a2a-js/sdk/client/grpc"
import { describe, expect, it } from "@effect/vitest"
import { Effect, FastCheck, Metric, type Scope } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import * as A2AServer from "../src/A2AServer.js"
import * as AgentExecutor from "../src/AgentExecutor.js"
import * as Authentication from "../src/Authentication.js"
import * as Observability from "../src/Observability.js"
import * as Part from "../src/Part.js"
import { captureLogs, eventually, post, userMessage } from "./fixtures/serverAgents.js"

type Transport = A2AServer.Transport
const transports: ReadonlyArray<Transport> = ["JSONRPC", "HTTP+JSON", "GRPC"]

/** Callers by key; what is never to be seen in a log line or an answer. */
const keys: Readonly<Record<string, string>> = { "key-a-5f1c9e": "a", "key-b-77d2a0": "b", "key-c-0e93b4": "c" }
const keyOf = (caller: string) => Object.entries(keys).find(([, id]) => id === caller)![0]
const wrongKey = "key-z-d41d8c"

const authenticate: Authentication.Authenticator = (request) => {
  const key = request.headers["x-api-key"]
  if (key === undefined) {
    return Effect.fail(new Authentication.Unauthenticated({ reason: "MissingCredentials", message: "no X-API-Key header" }))
  }
  const id = keys[key]
  return id === undefined
    ? Effect.fail(new Authentication.Unauthenticated({ reason: "InvalidCredentials", message: "unknown API key" }))
    : Effect.succeed({ id, name: `caller ${id}` })
}

/** Every run, with who it ran for. */
const makeAgent = () => {
  const runs: Array<{ readonly text: string; readonly caller: string | undefined }> = []
  const agent: AgentExecutor.Agent<Error> = (request) => {
    const text = Part.textOf(request.message.parts)
    runs.push({ text, caller: request.caller._tag === "Some" ? request.caller.value.id : undefined })
    switch (text) {
      case "ask":
        return Effect.succeed(AgentExecutor.InputRequired({ question: "Which account?" }))
      case "wait":
        return Effect.never
      case "fail":
        return Effect.fail(new Error("secret: the database password is hunter2"))
      default:
        return Effect.zipRight(Effect.logInfo("working"), Effect.succeed(AgentExecutor.completedText(`echo ${text}`)))
    }
  }
  return { agent, runs }
}

const serve = (options: Partial<A2AServer.Options<Error, never>> = {}) =>
  Effect.gen(function*() {
    const { agent, runs } = makeAgent()
    const server = yield* A2AServer.make({
      agent,
      card: { name: `auth-${crypto.randomUUID().slice(0, 8)}`, description: "authenticated" },
      authenticate,
      shutdownTimeout: "1 second",
      ...options
    })
    return { server, runs }
  })

const factoryOf = (transport: Transport) =>
  transport === "JSONRPC"
    ? new JsonRpcTransportFactory()
    : transport === "HTTP+JSON"
    ? new RestTransportFactory()
    : new GrpcTransportFactory()

type Result<A> = { readonly ok: A } | { readonly error: unknown }

const settle = <A>(run: () => Promise<A>): Effect.Effect<Result<A>> =>
  Effect.promise(() => Promise.resolve().then(run).then((ok) => ({ ok }), (error: unknown) => ({ error })))

/** The A2A reason of an SDK client's error (`TASK_NOT_FOUND`, …), or its message. */
const reasonOf = (result: Result<unknown>): string =>
  "ok" in result ? "ok" : (result.error as { reason?: string }).reason ?? String(result.error)

/** A raw SDK client of one transport, as one caller (or none). */
const callerOn = (url: string, transport: Transport, key: string | undefined) =>
  Effect.map(
    Effect.promise(() => new ClientFactory({ transports: [factoryOf(transport)] }).createFromUrl(url)),
    (client: Client) => {
      const options: RequestOptions = { serviceParameters: key === undefined ? {} : { "x-api-key": key } }
      const sendParams = (text: string, taskId = "") => ({
        tenant: "",
        message: userMessage(text, { taskId }),
        configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately: text === "wait" },
        metadata: {}
      })
      return {
        send: (text: string, taskId?: string) =>
          settle(() => client.sendMessage(sendParams(text, taskId), options) as Promise<Task>),
        get: (id: string) => settle(() => client.getTask({ id, tenant: "", historyLength: undefined }, options)),
        cancel: (id: string) => settle(() => client.cancelTask({ id, tenant: "", metadata: {} }, options)),
        list: () =>
          settle(() =>
            client.listTasks({
              tenant: "",
              contextId: "",
              status: TaskState.TASK_STATE_UNSPECIFIED,
              pageSize: 100,
              pageToken: "",
              historyLength: undefined,
              statusTimestampAfter: undefined,
              includeArtifacts: false
            }, options)
          ),
        // The first event of a subscription, or why there is none.
        subscribe: (id: string) =>
          settle(async () => {
            const events = client.resubscribeTask({ id, tenant: "" }, options)
            try {
              return (await events.next()).value
            } finally {
              void events.return(undefined).catch(() => undefined)
            }
          }),
      }
    }
  )

const taskOf = (result: Result<Task>): Task => {
  if (!("ok" in result)) throw new Error(`expected a task, got ${String(result.error)}`)
  return result.ok
}

const counter = (metric: Metric.Metric.Counter<number>, agent: string) =>
  Effect.map(Metric.value(metric.pipe(Metric.tagged("agent", agent))), (state) => state.count)

describe("A2AServer with authenticate", () => {
  it.scopedLive("no or wrong credentials: 401 with WWW-Authenticate, or UNAUTHENTICATED, on every transport, and nothing runs", () =>
    Effect.gen(function*() {
      const { runs, server } = yield* serve()
      for (const transport of transports) {
        for (const key of [undefined, wrongKey]) {
          const caller = yield* callerOn(server.url, transport, key)
          const sent = yield* caller.send("hello")
          expect("error" in sent, `${transport} ${key}`).toBe(true)
          const listed = yield* caller.list()
          expect("error" in listed).toBe(true)
        }
      }
      // The wire, as any client reads it.
      const rpc = yield* post(server.rpcUrl, JSON.stringify({ jsonrpc: "2.0", id: 1, method: "SendMessage", params: {} }), {
        "a2a-version": "1.0"
      })
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
          details: [{ "@type": "type.googleapis.com/google.rpc.ErrorInfo", reason: "UNAUTHENTICATED", domain: "effect-a2a" }]
        }
      })
      const grpc = yield* callerOn(server.url, "GRPC", undefined)
      const refused = yield* grpc.get("any")
      expect((refused as { error: { status?: number } }).error.status).toBe(16)
      // The extended card needs credentials; the card does not.
      const extended = yield* Effect.promise(() => fetch(`${server.urls["HTTP+JSON"]}/extendedAgentCard`).then((r) => r.status))
      expect(extended).toBe(401)
      const card = yield* Effect.promise(() => fetch(`${server.url}${A2AServer.cardPath}`).then((r) => r.status))
      expect(card).toBe(200)
      expect(runs).toEqual([])
      expect(yield* counter(Observability.serverUnauthenticated, server.card.name)).toBeGreaterThanOrEqual(13)

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
})

/** What caller `a` leaves behind for the others to try: a task in each state a message or a call can reach. */
const tasksOf = (url: string) =>
  Effect.gen(function*() {
    const a = yield* callerOn(url, "JSONRPC", keyOf("a"))
    return {
      completed: taskOf(yield* a.send("hello")),
      paused: taskOf(yield* a.send("ask")),
      running: taskOf(yield* a.send("wait"))
    }
  })

/** Caller `b` on every operation against each of `a`'s tasks: every one answers as for a task that does not exist. */
const othersSeeNothing = (url: string, rpcUrl: string, transport: Transport, tasks: Record<string, Task>) =>
  Effect.gen(function*() {
    const b = yield* callerOn(url, transport, keyOf("b"))
    const answers: Record<string, string> = {}
    for (const [name, task] of Object.entries(tasks)) {
      answers[`get ${name}`] = reasonOf(yield* b.get(task.id))
      answers[`cancel ${name}`] = reasonOf(yield* b.cancel(task.id))
      answers[`subscribe ${name}`] = reasonOf(yield* b.subscribe(task.id))
      answers[`continue ${name}`] = reasonOf(yield* b.send("more", task.id))
    }
    for (const [operation, reason] of Object.entries(answers)) expect(reason, `${transport} ${operation}`).toBe("TASK_NOT_FOUND")
    // The same answer as for an id nobody has: the answer tells nothing.
    expect(reasonOf(yield* b.get(crypto.randomUUID()))).toBe("TASK_NOT_FOUND")
    // Push configs, which the SDK's client does not ask for of a card without them: the same answer as for no task.
    if (transport === "JSONRPC") {
      const configs = (taskId: string) =>
        Effect.map(
          post(rpcUrl, JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ListTaskPushNotificationConfigs", params: { taskId } }), {
            "a2a-version": "1.0",
            "x-api-key": keyOf("b")
          }),
          (answer) => answer.text.replaceAll(taskId, "<id>")
        )
      expect(yield* configs(tasks.paused!.id)).toBe(yield* configs(crypto.randomUUID()))
    }
    const listed = yield* b.list()
    expect("ok" in listed && listed.ok.tasks).toEqual([])
  })

/** `a` still sees each of its tasks as it left them. */
const untouched = (url: string, tasks: Record<string, Task>) =>
  Effect.gen(function*() {
    const a = yield* callerOn(url, "JSONRPC", keyOf("a"))
    for (const [name, task] of Object.entries(tasks)) {
      const now = taskOf(yield* a.get(task.id))
      expect(now.status?.state, name).toBe(task.status?.state)
      expect(now.history.map((message) => message.messageId), name).toEqual(task.history.map((message) => message.messageId))
    }
    const listed = yield* a.list()
    expect("ok" in listed && listed.ok.tasks.map((task) => task.id).sort()).toEqual(Object.values(tasks).map((t) => t.id).sort())
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
        const warned = logs.lines.filter((line) => line.message === "Request on another caller's task, answered as not found")
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
        for (const transport of transports) clients.set(`${caller} ${transport}`, yield* callerOn(server.url, transport, keyOf(caller)))
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
