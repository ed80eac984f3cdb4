import { type StreamResponse, type TaskPushNotificationConfig, TaskState } from "@a2a-js/sdk"
import { V03PushNotificationSerializer } from "@a2a-js/sdk/compat/v0_3/server"
import {
  DefaultPushNotificationSender,
  InMemoryPushNotificationStore,
  ServerCallContext,
  STATE_HEADERS_KEY,
  V1PushNotificationSerializer
} from "@a2a-js/sdk/server"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Metric, type MetricKey, type MetricKeyType, Scope, Tracer } from "effect"
import type * as http from "node:http"
import type * as net from "node:net"
import * as internalMetrics from "../../../../src/internal/observability/metrics.js"
import * as PushSender from "../../../../src/internal/server/push/pushSender.js"
import * as PushTarget from "../../../../src/internal/server/push/pushTarget.js"
import * as ErrorId from "../../../../src/internal/wire/errorId.js"
import * as Observability from "../../../../src/Observability.js"
import { captureLogs, eventually } from "../../../fixtures/serverAgents.js"
import { type Answer, ok, type Received, webhook } from "../../../fixtures/webhook.js"

const count = (key: MetricKey.MetricKey<MetricKeyType.MetricKeyType.Counter<number>>, agent: string) =>
  Effect.map(Metric.value(internalMetrics.tagged(key, { agent })), (state) => state.count)

const counts = (agent: string) =>
  Effect.all({
    delivered: count(internalMetrics.serverPushDelivered, agent),
    retried: count(internalMetrics.serverPushRetried, agent),
    failed: count(internalMetrics.serverPushFailed, agent),
    refused: count(internalMetrics.serverPushRefused, agent)
  })

const status = (taskId: string, state: TaskState, seq: number): StreamResponse => ({
  payload: {
    $case: "statusUpdate",
    value: { taskId, contextId: "ctx", status: { state, message: undefined, timestamp: undefined }, metadata: { seq } }
  }
})

const context = (headers: Record<string, string> = {}, requestedVersion = "1.0") =>
  new ServerCallContext({ requestedVersion, state: new Map([[STATE_HEADERS_KEY, headers]]) })

const config = (
  taskId: string,
  url: string,
  extra: Partial<TaskPushNotificationConfig> = {}
): TaskPushNotificationConfig => ({
  tenant: "",
  id: "config-1",
  taskId,
  url,
  token: "",
  authentication: undefined,
  ...extra
})

/** A store holding `configs` of `taskId`, saved with `ctx`. */
const storeWith = (taskId: string, ctx: ServerCallContext, ...configs: Array<TaskPushNotificationConfig>) =>
  Effect.promise(async () => {
    const store = new InMemoryPushNotificationStore()
    for (const c of configs) await store.save(taskId, ctx, c)
    return store
  })

// The sequence numbers of the v1.0 status updates a webhook was sent, in arrival order.
const seqOf = (body: string): number => JSON.parse(body).statusUpdate.metadata.seq
const stateOf = (body: string): string => JSON.parse(body).statusUpdate.status.state

/** Answers by index: `answers[i]`, then 200 for any further request. */
const scripted = (...answers: ReadonlyArray<Answer>): Answer => (index, request, response) =>
  (answers[index] ?? ok)(index, request, response)
const artifact = (taskId: string, seq: number): StreamResponse => ({
  payload: {
    $case: "artifactUpdate",
    value: {
      taskId,
      contextId: "ctx",
      artifact: { artifactId: `a-${seq}`, name: "", description: "", parts: [], metadata: undefined, extensions: [] },
      append: false,
      lastChunk: true,
      metadata: { seq }
    }
  }
})
// Of a status or an artifact update.
const anySeqOf = (body: string): number => {
  const parsed = JSON.parse(body)
  return (parsed.statusUpdate ?? parsed.artifactUpdate).metadata.seq
}

/** The sequence numbers a webhook got, once `last` is among them and time for a straggler has passed. */
const seqsUntil = (hook: { readonly received: ReadonlyArray<Received> }, last: number, tries: number) => {
  const seqs = Effect.sync(() => hook.received.map((r) => anySeqOf(r.body)))
  return eventually(seqs, (got) => got.includes(last), tries).pipe(
    Effect.zipRight(Effect.sleep("200 millis")),
    Effect.zipRight(seqs)
  )
}

/** A webhook that answers nothing until released, then 200 to what it holds and to everything after. */
const holding = Effect.gen(function*() {
  const waiting: Array<http.ServerResponse> = []
  let released = false
  const hook = yield* webhook((_, __, response) => {
    if (released) response.writeHead(200).end()
    else waiting.push(response)
  })
  const release = () => {
    released = true
    for (const response of waiting.splice(0)) response.writeHead(200).end()
  }
  return { ...hook, release }
})

const status500: Answer = (_, __, response) => response.writeHead(500).end()
const reset: Answer = (_, __, response) => response.socket?.destroy()
const silent: Answer = () => undefined

describe("server/pushSender", () => {
  it.scopedLive("a receiver failing with a 500, a reset and a timeout gets every event once, in order", () =>
    Effect.gen(function*() {
      const hook = yield* webhook(scripted(status500, reset, silent))
      const ctx = context()
      const store = yield* storeWith("t-retry", ctx, config("t-retry", hook.url))
      const sender = yield* PushSender.make({ store, agent: "push-retry", timeout: "200 millis", backoff: "20 millis" })
      sender.notify(status("t-retry", TaskState.TASK_STATE_WORKING, 1), ctx)
      sender.notify(status("t-retry", TaskState.TASK_STATE_FAILED, 2), ctx)
      yield* eventually(counts("push-retry"), (c) => c.delivered === 2, 500)
      // Three failed attempts at the first event, then each event once.
      expect(hook.received.map((r) => seqOf(r.body))).toEqual([1, 1, 1, 1, 2])
      expect(stateOf(hook.received[4]!.body)).toBe("TASK_STATE_FAILED")
      expect(yield* counts("push-retry")).toEqual({ delivered: 2, retried: 3, failed: 0, refused: 0 })
    }))

  it.scopedLive("the body and content type are the SDK serializer's, v0.3 for a config registered over v0.3", () =>
    Effect.gen(function*() {
      const hook = yield* webhook()
      const store = new InMemoryPushNotificationStore()
      yield* Effect.promise(() =>
        store.save("t-body", context({}, "1.0"), config("t-body", `${hook.url}/new`, { id: "new" }))
      )
      yield* Effect.promise(() =>
        store.save("t-body", context({}, "0.3"), config("t-body", `${hook.url}/old`, { id: "old" }))
      )
      const sender = yield* PushSender.make({ store, agent: "push-body" })
      const event = status("t-body", TaskState.TASK_STATE_COMPLETED, 1)
      sender.notify(event, context())
      yield* eventually(counts("push-body"), (c) => c.delivered === 2, 500)
      const byPath = Object.fromEntries(hook.received.map((r) => [r.url, [r.body, r.headers["content-type"]]]))
      const v1 = new V1PushNotificationSerializer().serialize(event)
      const v03 = new V03PushNotificationSerializer().serialize(event)
      expect(byPath).toEqual({
        "/hook/new": [v1.body, "application/a2a+json"],
        "/hook/old": [v03.body, v03.contentType]
      })
      expect(v03.body).not.toBe(v1.body)
    }))

  it.scopedLive("a 429 waits its Retry-After; a 404 and a 302 are not retried, the redirect not followed", () =>
    Effect.gen(function*() {
      const limited = yield* webhook(
        scripted((_, __, response) => response.writeHead(429, { "Retry-After": "1" }).end())
      )
      const elsewhere = yield* webhook()
      const moved = yield* webhook((_, __, response) => response.writeHead(302, { Location: elsewhere.url }).end())
      const notFound = yield* webhook((_, __, response) => response.writeHead(404).end())
      const ctx = context()
      const store = new InMemoryPushNotificationStore()
      yield* Effect.promise(() => store.save("t-429", ctx, config("t-429", limited.url)))
      yield* Effect.promise(() => store.save("t-404", ctx, config("t-404", notFound.url)))
      yield* Effect.promise(() => store.save("t-302", ctx, config("t-302", moved.url)))
      const sender = yield* PushSender.make({ store, agent: "push-status", backoff: "20 millis" })
      sender.notify(status("t-429", TaskState.TASK_STATE_COMPLETED, 1), ctx)
      sender.notify(status("t-404", TaskState.TASK_STATE_COMPLETED, 1), ctx)
      sender.notify(status("t-302", TaskState.TASK_STATE_COMPLETED, 1), ctx)
      yield* eventually(counts("push-status"), (c) => c.delivered === 1 && c.failed === 2, 500)
      const waited = limited.received[1]!.at - limited.received[0]!.at
      expect(waited).toBeGreaterThanOrEqual(950)
      expect(waited).toBeLessThan(2500)
      // Time enough for a retry at the 20 ms backoff, had there been one.
      yield* Effect.sleep("300 millis")
      expect(notFound.received).toHaveLength(1)
      expect(moved.received).toHaveLength(1)
      expect(elsewhere.received).toHaveLength(0)
      expect(yield* counts("push-status")).toEqual({ delivered: 1, retried: 1, failed: 2, refused: 0 })
    }))

  it.scopedLive("gives up after maxAttempts: counted failed, one warning with error id and host, no secret logged", () =>
    Effect.gen(function*() {
      const { layer, lines } = captureLogs()
      const hook = yield* webhook((_, __, response) => response.writeHead(503).end())
      const ctx = context()
      const token = "tok-SECRET-4f7a9c"
      const url = `${hook.url}?sig=QUERY-SECRET-82b1`
      const store = yield* storeWith("t-giveup", ctx, config("t-giveup", url, { id: "config-g", token }))
      const sender = yield* PushSender.make({ store, agent: "push-giveup", maxAttempts: 3, backoff: "20 millis" }).pipe(
        Effect.provide(layer)
      )
      sender.notify(status("t-giveup", TaskState.TASK_STATE_FAILED, 1), ctx)
      yield* eventually(counts("push-giveup"), (c) => c.failed === 1, 500)
      expect(hook.received).toHaveLength(3)
      expect(hook.received[0]!.headers["x-a2a-notification-token"]).toBe(token)
      expect(yield* counts("push-giveup")).toEqual({ delivered: 0, retried: 2, failed: 1, refused: 0 })
      const warnings = lines.filter((line) => line.level === "WARN")
      expect(warnings).toHaveLength(1)
      expect(warnings[0]!.annotations).toMatchObject({
        taskId: "t-giveup",
        configId: "config-g",
        host: `127.0.0.1:${hook.port}`,
        reason: "ServerError"
      })
      expect(warnings[0]!.annotations.errorId).toMatch(ErrorId.pattern)
      for (const line of lines) {
        const text = JSON.stringify(line)
        expect(text).not.toContain(token)
        expect(text).not.toContain("QUERY-SECRET")
      }
    }))

  it.scopedLive("sends Authorization from authentication, else the token in X-A2A-Notification-Token", () =>
    Effect.gen(function*() {
      const hook = yield* webhook()
      const ctx = context()
      const store = yield* storeWith(
        "t-auth",
        ctx,
        config("t-auth", `${hook.url}/a`, {
          id: "a",
          token: "ignored-token",
          authentication: { scheme: "Bearer", credentials: "cred-1" }
        }),
        config("t-auth", `${hook.url}/b`, { id: "b", token: "token-2" })
      )
      const sender = yield* PushSender.make({ store, agent: "push-auth" })
      sender.notify(status("t-auth", TaskState.TASK_STATE_COMPLETED, 1), ctx)
      yield* eventually(counts("push-auth"), (c) => c.delivered === 2, 500)
      const byPath = Object.fromEntries(hook.received.map((r) => [r.url, r.headers]))
      expect(byPath["/hook/a"]!.authorization).toBe("Bearer cred-1")
      expect(byPath["/hook/a"]!["x-a2a-notification-token"]).toBeUndefined()
      expect(byPath["/hook/b"]!["x-a2a-notification-token"]).toBe("token-2")
      expect(byPath["/hook/b"]!.authorization).toBeUndefined()
    }))

  it("builds the same auth headers as the SDK's sender", () => {
    const sdk = new DefaultPushNotificationSender(new InMemoryPushNotificationStore()) as unknown as {
      _buildAuthHeaders: (config: TaskPushNotificationConfig) => Record<string, string>
    }
    const cases: Array<Partial<TaskPushNotificationConfig>> = [
      {},
      { token: "t" },
      { authentication: { scheme: "Basic", credentials: "dXNlcg==" } },
      { authentication: { scheme: "Bearer", credentials: "" }, token: "t" },
      { authentication: { scheme: "", credentials: "c" }, token: "" },
      { authentication: { scheme: "Bearer", credentials: "c" }, token: "t" }
    ]
    for (const extra of cases) {
      const c = config("t", "http://127.0.0.1/", extra)
      expect(PushSender.authHeaders(c)).toEqual(sdk._buildAuthHeaders(c))
    }
  })

  it.scopedLive("a target the lookup refuses (EPUSHTARGET) is not retried nor connected to, counted refused", () =>
    Effect.gen(function*() {
      const hook = yield* webhook()
      const ctx = context()
      const lookups: Array<string> = []
      const lookup = ((hostname: string, _: unknown, callback: (error: NodeJS.ErrnoException) => void) => {
        lookups.push(hostname)
        callback(Object.assign(new Error(`push target ${hostname} refused`), { code: "EPUSHTARGET" }))
      }) as unknown as net.LookupFunction
      // By name, and by an IP literal, which Node connects to without a lookup.
      const store = yield* storeWith(
        "t-refused",
        ctx,
        config("t-refused", `http://localhost:${hook.port}/hook`, { id: "by-name" }),
        config("t-refused", hook.url, { id: "by-address" })
      )
      const sender = yield* PushSender.make({ store, agent: "push-refused", lookup, backoff: "20 millis" })
      sender.notify(status("t-refused", TaskState.TASK_STATE_COMPLETED, 1), ctx)
      yield* eventually(counts("push-refused"), (c) => c.refused === 2, 500)
      yield* Effect.sleep("200 millis")
      expect(yield* counts("push-refused")).toEqual({ delivered: 0, retried: 0, failed: 0, refused: 2 })
      expect(lookups.sort()).toEqual(["127.0.0.1", "localhost"])
      expect(hook.connections()).toBe(0)
      expect(hook.received).toHaveLength(0)
    }))

  it.scopedLive("behind the guard, a target whose name does not resolve fails as any other delivery: counted failed, one warning, nothing connected", () =>
    Effect.gen(function*() {
      const { layer, lines } = captureLogs()
      const ctx = context()
      const store = yield* storeWith("t-nxdomain", ctx, config("t-nxdomain", "https://hooks.example.invalid/hook"))
      const sender = yield* PushSender.make({
        store,
        agent: "push-nxdomain",
        lookup: PushTarget.guardedLookup(PushTarget.policyOf(undefined, undefined)),
        backoff: "20 millis"
      }).pipe(Effect.provide(layer))
      sender.notify(status("t-nxdomain", TaskState.TASK_STATE_COMPLETED, 1), ctx)
      yield* eventually(counts("push-nxdomain"), (c) => c.failed === 1, 500)
      expect(yield* counts("push-nxdomain")).toEqual({ delivered: 0, retried: 0, failed: 1, refused: 0 })
      const warnings = lines.filter((line) => line.level === "WARN")
      expect(warnings.map((line) => line.annotations)).toMatchObject([
        { taskId: "t-nxdomain", host: "hooks.example.invalid", reason: "InvalidTarget" }
      ])
    }))

  it.scopedLive("under a slow webhook notify returns at once and 50 events arrive in order, the final last", () =>
    Effect.gen(function*() {
      const hook = yield* webhook((_, __, response) => setTimeout(() => response.writeHead(200).end(), 50))
      const ctx = context()
      const store = yield* storeWith("t-slow", ctx, config("t-slow", hook.url))
      const sender = yield* PushSender.make({ store, agent: "push-slow" })
      const started = performance.now()
      for (let seq = 1; seq < 50; seq++) sender.notify(status("t-slow", TaskState.TASK_STATE_WORKING, seq), ctx)
      sender.notify(status("t-slow", TaskState.TASK_STATE_COMPLETED, 50), ctx)
      expect(performance.now() - started).toBeLessThan(50)
      const seqs = yield* seqsUntil(hook, 50, 1000)
      expect(seqs.at(-1)).toBe(50)
      expect(seqs.filter((seq) => seq === 50)).toHaveLength(1)
      for (let i = 1; i < seqs.length; i++) expect(seqs[i]!).toBeGreaterThan(seqs[i - 1]!)
      // The running updates queued behind the slow first delivery made way for the final one.
      expect(seqs.length).toBeLessThan(50)
      expect(stateOf(hook.received.at(-1)!.body)).toBe("TASK_STATE_COMPLETED")
    }))

  it.scopedLive("the delivery's span joins the trace of the run's traceparent", () =>
    Effect.gen(function*() {
      const hook = yield* webhook()
      const spans: Array<{ name: string; parent: string | undefined }> = []
      const native = yield* Effect.tracer
      const tracer = Tracer.make({
        span: (name, parent, ...rest) => {
          spans.push({
            name,
            parent: parent._tag === "Some" ? `${parent.value.traceId}/${parent.value.spanId}` : undefined
          })
          return native.span(name, parent, ...rest)
        },
        context: (f) => f()
      })
      const traceId = "4bf92f3577b34da6a3ce929d0e0e4736"
      const spanId = "00f067aa0ba902b7"
      const ctx = context({ traceparent: `00-${traceId}-${spanId}-01` })
      const store = yield* storeWith("t-span", ctx, config("t-span", hook.url))
      const sender = yield* PushSender.make({ store, agent: "push-span" }).pipe(Effect.withTracer(tracer))
      sender.notify(status("t-span", TaskState.TASK_STATE_COMPLETED, 1), ctx)
      yield* eventually(counts("push-span"), (c) => c.delivered === 1, 500)
      expect(spans.filter((s) => s.name === Observability.pushSpanName)).toEqual([
        { name: "A2AServer.push", parent: `${traceId}/${spanId}` }
      ])
    }))

  it.scopedLive("closing its scope lets the attempt in flight finish within the timeout, then sends nothing more", () =>
    Effect.gen(function*() {
      const hook = yield* webhook((_, __, response) => setTimeout(() => response.writeHead(200).end(), 300))
      const ctx = context()
      const store = yield* storeWith("t-close", ctx, config("t-close", hook.url))
      const scope = yield* Scope.make()
      const sender = yield* PushSender.make({ store, agent: "push-close", timeout: "2 seconds" }).pipe(
        Scope.extend(scope)
      )
      sender.notify(status("t-close", TaskState.TASK_STATE_WORKING, 1), ctx)
      sender.notify(status("t-close", TaskState.TASK_STATE_COMPLETED, 2), ctx)
      yield* eventually(Effect.sync(() => hook.received.length), (n) => n === 1, 200)
      const started = performance.now()
      yield* Scope.close(scope, Exit.void)
      const took = performance.now() - started
      expect(took).toBeGreaterThan(150)
      expect(took).toBeLessThan(1500)
      sender.notify(status("t-close", TaskState.TASK_STATE_COMPLETED, 3), ctx)
      yield* Effect.sleep("400 millis")
      expect(hook.received.map((r) => seqOf(r.body))).toEqual([1])
      expect(yield* counts("push-close")).toEqual({ delivered: 1, retried: 0, failed: 0, refused: 0 })
    }))

  it.scopedLive("gives up at once when the next attempt would start past the budget, Retry-After included", () =>
    Effect.gen(function*() {
      const { layer, lines } = captureLogs()
      const limited = yield* webhook((_, __, response) => response.writeHead(429, { "Retry-After": "5" }).end())
      const ctx = context()
      const store = yield* storeWith("t-budget", ctx, config("t-budget", limited.url))
      const sender = yield* PushSender.make({ store, agent: "push-budget", budget: "1 second", backoff: "20 millis" })
        .pipe(
          Effect.provide(layer)
        )
      const started = performance.now()
      sender.notify(status("t-budget", TaskState.TASK_STATE_COMPLETED, 1), ctx)
      yield* eventually(counts("push-budget"), (c) => c.failed === 1, 300)
      expect(performance.now() - started).toBeLessThan(900)
      expect(limited.received).toHaveLength(1)
      expect(lines.filter((line) => line.level === "WARN").map((line) => line.annotations.reason)).toEqual([
        "RateLimited"
      ])
    }))

  it.scopedLive("a refused connection is retried up to maxAttempts", () =>
    Effect.gen(function*() {
      // A port just freed on loopback: nothing listens there.
      const port = yield* Effect.scoped(Effect.map(webhook(), (hook) => hook.port))
      const ctx = context()
      const store = yield* storeWith("t-refused-port", ctx, config("t-refused-port", `http://127.0.0.1:${port}/hook`))
      const sender = yield* PushSender.make({ store, agent: "push-connrefused", maxAttempts: 3, backoff: "20 millis" })
      sender.notify(status("t-refused-port", TaskState.TASK_STATE_COMPLETED, 1), ctx)
      yield* eventually(counts("push-connrefused"), (c) => c.failed === 1, 500)
      expect(yield* counts("push-connrefused")).toEqual({ delivered: 0, retried: 2, failed: 1, refused: 0 })
    }))

  it.scopedLive("a later status update makes an earlier running one not yet sent moot; artifacts and the final state stay, in order", () =>
    Effect.gen(function*() {
      const hook = yield* holding
      const ctx = context()
      const store = yield* storeWith("t-moot", ctx, config("t-moot", hook.url))
      const sender = yield* PushSender.make({ store, agent: "push-moot" })
      sender.notify(status("t-moot", TaskState.TASK_STATE_WORKING, 1), ctx)
      yield* eventually(Effect.sync(() => hook.received.length), (n) => n === 1, 200)
      const later: ReadonlyArray<StreamResponse> = [
        status("t-moot", TaskState.TASK_STATE_WORKING, 2),
        artifact("t-moot", 3),
        status("t-moot", TaskState.TASK_STATE_WORKING, 4),
        status("t-moot", TaskState.TASK_STATE_INPUT_REQUIRED, 5),
        artifact("t-moot", 6)
      ]
      for (const event of later) {
        sender.notify(event, ctx)
        // Each waits in the lane, its configs loaded, before the next comes.
        yield* Effect.sleep("5 millis")
      }
      hook.release()
      yield* eventually(counts("push-moot"), (c) => c.delivered === 4, 200)
      yield* Effect.sleep("100 millis")
      // INPUT_REQUIRED made the WORKING before it moot, and stays: no status came after it.
      expect(hook.received.map((r) => anySeqOf(r.body))).toEqual([1, 3, 5, 6])
      sender.notify(status("t-moot", TaskState.TASK_STATE_COMPLETED, 7), ctx)
      yield* eventually(counts("push-moot"), (c) => c.delivered === 5, 200)
      expect(stateOf(hook.received.at(-1)!.body)).toBe("TASK_STATE_COMPLETED")
      expect(yield* counts("push-moot")).toEqual({ delivered: 5, retried: 0, failed: 0, refused: 0 })
    }))

  it.scopedLive("behind a webhook that holds every request, a lane keeps at most maxPending: the oldest dropped, counted failed and logged (Overflow), the final delivered last", () =>
    Effect.gen(function*() {
      const { layer, lines } = captureLogs()
      const hook = yield* holding
      const ctx = context()
      const token = "tok-SECRET-overflow"
      const store = yield* storeWith("t-over", ctx, config("t-over", hook.url, { id: "config-o", token }))
      const sender = yield* PushSender.make({ store, agent: "push-overflow", maxPending: 5 }).pipe(
        Effect.provide(layer)
      )
      sender.notify(status("t-over", TaskState.TASK_STATE_WORKING, 1), ctx)
      yield* eventually(Effect.sync(() => hook.received.length), (n) => n === 1, 200)
      for (let seq = 2; seq < 40; seq++) {
        sender.notify(artifact("t-over", seq), ctx)
        yield* Effect.sleep("2 millis")
      }
      sender.notify(status("t-over", TaskState.TASK_STATE_COMPLETED, 40), ctx)
      yield* Effect.sleep("20 millis")
      // Nothing more reached the webhook while it held the first request.
      expect(hook.received).toHaveLength(1)
      hook.release()
      yield* eventually(counts("push-overflow"), (c) => c.delivered === 6, 300)
      yield* Effect.sleep("100 millis")
      // The first, then the five newest: in order, the final last.
      expect(hook.received.map((r) => anySeqOf(r.body))).toEqual([1, 36, 37, 38, 39, 40])
      expect(stateOf(hook.received.at(-1)!.body)).toBe("TASK_STATE_COMPLETED")
      expect(yield* counts("push-overflow")).toEqual({ delivered: 6, retried: 0, failed: 34, refused: 0 })
      const warnings = lines.filter((line) => line.level === "WARN")
      expect(warnings).toHaveLength(34)
      for (const warning of warnings) {
        expect(warning.annotations).toMatchObject({
          taskId: "t-over",
          configId: "config-o",
          host: `127.0.0.1:${hook.port}`,
          reason: "Overflow"
        })
        expect(warning.annotations.errorId).toMatch(ErrorId.pattern)
        expect(JSON.stringify(warning)).not.toContain(token)
      }
    }))

  it.scopedLive("a burst of events while the configs load waits at most maxPending per task: the newest delivered in order, the final last, the rest counted failed", () =>
    Effect.gen(function*() {
      const { layer, lines } = captureLogs()
      const hook = yield* holding
      const ctx = context()
      const store = yield* storeWith("t-burst", ctx, config("t-burst", hook.url))
      const sender = yield* PushSender.make({ store, agent: "push-burst", maxPending: 5 }).pipe(Effect.provide(layer))
      for (let seq = 1; seq < 40; seq++) sender.notify(artifact("t-burst", seq), ctx)
      sender.notify(status("t-burst", TaskState.TASK_STATE_COMPLETED, 40), ctx)
      yield* eventually(Effect.sync(() => hook.received.length), (n) => n === 1, 200)
      yield* Effect.sleep("20 millis")
      hook.release()
      const seqs = yield* seqsUntil(hook, 40, 300)
      // At most one in hand per queue beside the five waiting.
      expect(seqs.length).toBeLessThanOrEqual(1 + 5 + 1)
      expect(seqs.slice(-5)).toEqual([36, 37, 38, 39, 40])
      for (let i = 1; i < seqs.length; i++) expect(seqs[i]!).toBeGreaterThan(seqs[i - 1]!)
      expect(yield* counts("push-burst")).toEqual({
        delivered: seqs.length,
        retried: 0,
        failed: 40 - seqs.length,
        refused: 0
      })
      const warnings = lines.filter((line) => line.level === "WARN")
      expect(warnings).toHaveLength(40 - seqs.length)
      expect(warnings.every((line) => line.annotations.reason === "Overflow" && line.annotations.taskId === "t-burst"))
        .toBe(true)
    }))
})
