/**
 * The HTTP+JSON (REST) transport of the server: the SDK's own REST client
 * against our routes and against the SDK's Express `restHandler` with the
 * same agent, bad input, the opaque failure text, shedding and shutdown,
 * the card's caching, and the ErrorInfo of JSON-RPC errors.
 */
import { type Message, type StreamResponse, type Task, TaskState } from "@a2a-js/sdk"
import type { Client } from "@a2a-js/sdk/client"
import { ERROR_INFO_TYPE } from "@a2a-js/sdk/errors"
import { InMemoryTaskStore, type TaskStore } from "@a2a-js/sdk/server"
import * as NodeSdk from "@effect/opentelemetry/NodeSdk"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as HttpRouter from "@effect/platform/HttpRouter"
import type * as HttpServer from "@effect/platform/HttpServer"
import { describe, expect, it } from "@effect/vitest"
import { InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base"
import { Deferred, Effect, FastCheck, Fiber, Metric } from "effect"
import * as Http from "node:http"
import * as A2AServer from "../src/A2AServer.js"
import * as AgentExecutor from "../src/AgentExecutor.js"
import * as IdempotencyLedger from "../src/IdempotencyLedger.js"
import * as internalHttp from "../src/internal/server/edge/http.js"
import * as internalSubscription from "../src/internal/server/handler/subscription.js"
import * as internalRest from "../src/internal/server/transport/rest.js"
import * as Observability from "../src/Observability.js"
import * as Part from "../src/Part.js"
import { restClient, sdkRestPeer } from "./fixtures/restPeer.js"
import { captureLogs, eventually, post, userMessage } from "./fixtures/serverAgents.js"

const card = { name: "rest-test", description: "A2AServer over HTTP+JSON" }
const secret = "sk-live-do-not-leak-7f3a"

// Ends as the message asks; a failure carries a secret that must stay in the server.
const agent: AgentExecutor.Agent<Error> = (request) =>
  Effect.gen(function*() {
    const text = Part.textOf(request.message.parts)
    yield* AgentExecutor.status("thinking")
    if (text.startsWith("fail")) return yield* Effect.fail(new Error(`${secret}: ${text}`))
    if (text === "hang") return yield* Effect.never
    if (text === "slow") yield* Effect.sleep("2 seconds")
    return AgentExecutor.completedText(`echo ${text}`)
  })

const uuid = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g
const timestamp = /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z/g
const errorIdText = /error_id: [0-9a-f]{12}/g

/** A value with its ids, timestamps and error ids blanked: what two servers may differ in. */
const normal = (value: unknown): unknown =>
  JSON.parse(
    (JSON.stringify(value) ?? "null").replace(uuid, "<id>").replace(timestamp, "<time>").replace(
      errorIdText,
      "error_id: <id>"
    )
  )

const settled = <A>(promise: () => Promise<A>) =>
  Effect.promise(() =>
    promise().then(
      (value) => ({ ok: normal(value) }),
      (error: { name?: string; message?: string; statusCode?: number }) => ({
        error: normal({ name: error.name, message: error.message, statusCode: error.statusCode })
      })
    )
  )

const request = (message: Message, returnImmediately = false) => ({
  tenant: "",
  message,
  configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately },
  metadata: {}
})

const collect = (client: Client, message: Message) =>
  settled(async () => {
    const events: Array<StreamResponse | unknown> = []
    for await (const event of client.sendMessageStream(request(message))) events.push(event)
    return events
  })

/** The same calls through the SDK's REST client, with the same messages; their answers, normalised. */
const scenario = (client: Client, baseUrl: string, restUrl: string) =>
  Effect.gen(function*() {
    const completedMessage = userMessage("complete", { messageId: "m-complete" })
    const completed = yield* settled(() => client.sendMessage(request(completedMessage)))
    const completedTask = (yield* Effect.promise(() => client.sendMessage(request(userMessage("again"))))) as Task
    const failed = yield* settled(() => client.sendMessage(request(userMessage("fail now", { messageId: "m-fail" }))))
    const streamed = yield* collect(client, userMessage("stream me", { messageId: "m-stream" }))
    const fetched = yield* settled(() => client.getTask({ id: completedTask.id, tenant: "", historyLength: 1 }))
    const unknown = yield* settled(() => client.getTask({ id: "no-such-task", tenant: "", historyLength: undefined }))
    const notCancelable = yield* settled(() => client.cancelTask({ id: completedTask.id, tenant: "", metadata: {} }))
    const hanging = (yield* Effect.promise(() => client.sendMessage(request(userMessage("hang"), true)))) as Task
    const canceled = yield* settled(() => client.cancelTask({ id: hanging.id, tenant: "", metadata: {} }))
    const subscribedEnded = yield* settled(async () => {
      const events: Array<unknown> = []
      for await (const event of client.resubscribeTask({ id: completedTask.id, tenant: "" })) events.push(event)
      return events
    })
    // A subscription to a running task: its snapshot, then what its cancel brings, to its end.
    const running = (yield* Effect.promise(() => client.sendMessage(request(userMessage("hang"), true)))) as Task
    const subscribed = yield* settled(async () => {
      const events: Array<unknown> = []
      const iterator = client.resubscribeTask({ id: running.id, tenant: "" })[Symbol.asyncIterator]()
      const first = await iterator.next()
      events.push(first.value)
      await client.cancelTask({ id: running.id, tenant: "", metadata: {} })
      for (let i = 0; i < 10; i++) {
        const next = await iterator.next()
        if (next.done === true) break
        events.push(next.value)
      }
      return events
    })
    const pushConfig = yield* settled(() =>
      client.deleteTaskPushNotificationConfig({ taskId: completedTask.id, id: "config", tenant: "" })
    )
    const listed = yield* Effect.promise(() =>
      fetch(`${restUrl}/tasks?contextId=${completedTask.contextId}&includeArtifacts=true`, {
        headers: { "A2A-Version": "1.0" }
      })
        .then(async (response) => ({ status: response.status, body: normal(await response.json()) }))
    )
    return {
      completed,
      failed,
      streamed,
      fetched,
      unknown,
      notCancelable,
      canceled,
      subscribedEnded,
      subscribed,
      pushConfig,
      listed,
      baseUrl: baseUrl !== ""
    }
  })

const statusBody = (text: string) =>
  JSON.parse(text) as {
    error: { code: number; status: string; message: string; details: Array<Record<string, unknown>> }
  }

/**
 * A `google.rpc.Status` body whose code is the HTTP status, with an ErrorInfo, in the type of a client that
 * names none (fetch sends `Accept: *\/*`).
 */
const expectStatus = (
  answer: { status: number; text: string; headers: Headers },
  status: number,
  name: string,
  reason?: string,
  type = "application/json"
) => {
  expect(answer.headers.get("content-type")).toBe(type)
  const body = statusBody(answer.text)
  expect(body.error.code).toBe(answer.status)
  expect(answer.status).toBe(status)
  expect(body.error.status).toBe(name)
  expect(typeof body.error.message).toBe("string")
  const info = body.error.details.find((detail) => detail["@type"] === ERROR_INFO_TYPE)
  expect(info).toBeDefined()
  if (reason !== undefined) expect(info).toMatchObject({ reason, domain: "a2a-protocol.org" })
  return body
}

const get = (url: string, headers: Record<string, string> = { "A2A-Version": "1.0" }) =>
  Effect.promise(async () => {
    const response = await fetch(url, { headers })
    return { status: response.status, text: await response.text(), headers: response.headers }
  })

const v1 = { "A2A-Version": "1.0" }

describe("A2AServer over HTTP+JSON", () => {
  it.scopedLive("the SDK's REST client gets the same answers from our routes as from the SDK's restHandler, the same agent behind both", () =>
    Effect.gen(function*() {
      const server = yield* A2AServer.make({ agent, card })
      const restUrl = server.urls["HTTP+JSON"]!
      expect(restUrl).toBe(`${server.url}/a2a/rest`)
      expect(server.card.supportedInterfaces).toContainEqual({
        url: restUrl,
        protocolBinding: "HTTP+JSON",
        tenant: "",
        protocolVersion: "1.0"
      })
      const peer = yield* sdkRestPeer(yield* AgentExecutor.make(agent), new InMemoryTaskStore())

      const ours = yield* scenario(yield* restClient(server.url), server.url, restUrl)
      const theirs = yield* scenario(yield* restClient(peer.url), peer.url, peer.restUrl)
      expect(ours).toEqual(theirs)

      // What the answers are, beyond being equal.
      expect(ours.completed).toMatchObject({ ok: { status: { state: TaskState.TASK_STATE_COMPLETED } } })
      const failedText = (ours.failed as { ok: Task }).ok.status!.message!.parts[0]!.content
      expect(failedText).toEqual({ $case: "text", value: "Agent execution failed. (error_id: <id>)" })
      expect(ours.unknown).toEqual({
        error: { name: "TaskNotFoundError", message: "Task not found: no-such-task", statusCode: 404 }
      })
      expect(ours.notCancelable).toMatchObject({ error: { name: "TaskNotCancelableError", statusCode: 400 } })
      expect(ours.canceled).toMatchObject({ ok: { status: { state: TaskState.TASK_STATE_CANCELED } } })
      expect((ours.streamed as { ok: Array<unknown> }).ok.length).toBeGreaterThan(1)
      expect(ours.subscribedEnded).toMatchObject({ error: { name: "UnsupportedOperationError", statusCode: 400 } })
      expect(JSON.stringify(ours.subscribed)).toContain(`"state":${TaskState.TASK_STATE_CANCELED}`)
      expect(ours.pushConfig).toMatchObject({ error: { name: "PushNotificationNotSupportedError", statusCode: 400 } })
      expect(ours.listed).toMatchObject({
        status: 200,
        body: { tasks: [{ artifacts: expect.any(Array) }], totalSize: 1 }
      })
    }).pipe(Effect.provide(captureLogs().layer)))

  it.scopedLive("FAILED carries exactly the opaque text; no answer holds the exception's message, which is logged under its id", () => {
    const logs = captureLogs()
    return Effect.gen(function*() {
      const server = yield* A2AServer.make({ agent, card })
      const restUrl = server.urls["HTTP+JSON"]!
      const message = (text: string) =>
        JSON.stringify({ message: { messageId: crypto.randomUUID(), role: "ROLE_USER", parts: [{ text }] } })
      const sent = yield* post(`${restUrl}/message:send`, message("fail blocking"), v1)
      expect(sent.status).toBe(200)
      expect(sent.headers.get("content-type")).toBe("application/json")
      const task = JSON.parse(sent.text).task
      expect(task.status.state).toBe("TASK_STATE_FAILED")
      const text = task.status.message.parts[0].text as string
      expect(text).toMatch(/^Agent execution failed\. \(error_id: [0-9a-f]{12}\)$/)
      const streamed = yield* post(`${restUrl}/message:stream`, message("fail streaming"), v1)
      expect(streamed.headers.get("content-type")).toBe("text/event-stream")
      expect(streamed.text).toContain("TASK_STATE_FAILED")
      const fetched = yield* get(`${restUrl}/tasks/${task.id}`)
      const listed = yield* get(`${restUrl}/tasks`)
      for (const answer of [sent, streamed, fetched, listed]) expect(answer.text).not.toContain(secret)
      const errorId = /error_id: ([0-9a-f]{12})/.exec(text)![1]
      expect(String(logs.lines.find((line) => line.annotations.errorId === errorId)?.annotations.cause)).toContain(
        secret
      )
    }).pipe(Effect.provide(logs.layer))
  })

  it.scopedLive("an internal error answers 500 INTERNAL with only an error id, where the SDK's restHandler sends the raw message", () => {
    const logs = captureLogs()
    return Effect.gen(function*() {
      const inner = new InMemoryTaskStore()
      const failing: TaskStore = {
        save: (task, context) => inner.save(task, context),
        load: async (id, context) => {
          if (id.startsWith("boom")) throw new Error(`database says ${secret}`)
          return inner.load(id, context)
        },
        list: (params, context) => inner.list(params, context)
      }
      const server = yield* A2AServer.make({ agent, card, taskStore: failing })
      const ours = yield* get(`${server.urls["HTTP+JSON"]}/tasks/boom-1`)
      const body = expectStatus(ours, 500, "INTERNAL", "INTERNAL_ERROR")
      expect(body.error.message).toMatch(/^Internal error\. \(error_id: [0-9a-f]{12}\)$/)
      expect(ours.text).not.toContain(secret)
      const errorId = /error_id: ([0-9a-f]{12})/.exec(body.error.message)![1]
      expect(String(logs.lines.find((line) => line.annotations.errorId === errorId)?.annotations.cause)).toContain(
        secret
      )

      const peer = yield* sdkRestPeer(yield* AgentExecutor.make(agent), failing)
      const theirs = yield* get(`${peer.restUrl}/tasks/boom-1`)
      expect(theirs.status).toBe(500)
      expect(theirs.text).toContain(secret)
    }).pipe(Effect.provide(logs.layer))
  })

  it.scopedLive("bad input gets a well-formed google.rpc.Status with an ErrorInfo, the same as the SDK's where it has one", () =>
    Effect.gen(function*() {
      const server = yield* A2AServer.make({ agent, card, maxBodyBytes: 1024 })
      const restUrl = server.urls["HTTP+JSON"]!
      const peer = yield* sdkRestPeer(yield* AgentExecutor.make(agent))

      const malformed = yield* post(`${restUrl}/message:send`, "{not json", v1)
      expectStatus(malformed, 400, "INVALID_ARGUMENT", "INVALID_PARAMS")
      expect(JSON.parse(malformed.text)).toEqual(
        JSON.parse((yield* post(`${peer.restUrl}/message:send`, "{not json", v1)).text)
      )
      const invalidUtf8 = yield* post(`${restUrl}/message:send`, new Uint8Array([0x7b, 0xff, 0xfe, 0x7d]), v1)
      expectStatus(invalidUtf8, 400, "INVALID_ARGUMENT", "INVALID_PARAMS")

      const wrongType = { ...v1, "content-type": "text/plain" }
      const typed = yield* post(`${restUrl}/message:send`, "hello", wrongType)
      expectStatus(typed, 400, "INVALID_ARGUMENT", "CONTENT_TYPE_NOT_SUPPORTED")
      expect(JSON.parse(typed.text)).toEqual(
        JSON.parse((yield* post(`${peer.restUrl}/message:send`, "hello", wrongType)).text)
      )

      const noMessage = yield* post(`${restUrl}/message:send`, "{}", v1)
      expectStatus(noMessage, 400, "INVALID_ARGUMENT", "INVALID_PARAMS")
      expect(JSON.parse(noMessage.text)).toEqual(
        JSON.parse((yield* post(`${peer.restUrl}/message:send`, "{}", v1)).text)
      )

      const badHistory = yield* get(`${restUrl}/tasks/some-task?historyLength=abc`)
      expectStatus(badHistory, 400, "INVALID_ARGUMENT", "INVALID_PARAMS")
      expect(JSON.parse(badHistory.text)).toEqual(
        JSON.parse((yield* get(`${peer.restUrl}/tasks/some-task?historyLength=abc`)).text)
      )

      for (const query of ["pageSize=0", "pageSize=1.5", "historyLength=-1"]) {
        const badList = yield* get(`${restUrl}/tasks?${query}`)
        expectStatus(badList, 400, "INVALID_ARGUMENT", "INVALID_PARAMS")
        expect(JSON.parse(badList.text)).toEqual(JSON.parse((yield* get(`${peer.restUrl}/tasks?${query}`)).text))
      }

      // No A2A-Version: a v0.3 request, and HTTP+JSON is served for v1.0 only.
      const unversioned = yield* get(`${restUrl}/tasks/some-task`, {})
      expectStatus(unversioned, 400, "FAILED_PRECONDITION", "VERSION_NOT_SUPPORTED")
      expect(JSON.parse(unversioned.text)).toEqual(JSON.parse((yield* get(`${peer.restUrl}/tasks/some-task`, {})).text))

      const oversized = yield* post(`${restUrl}/message:send`, JSON.stringify({ pad: "x".repeat(4096) }), v1)
      expectStatus(oversized, 413, "INVALID_ARGUMENT", "INVALID_PARAMS")

      const unknownRoute = yield* get(`${restUrl}/no/such/route`)
      // MethodNotFound, which no A2A reason says: the ErrorInfo is the status's own, in our domain.
      const noRoute = expectStatus(unknownRoute, 404, "NOT_FOUND")
      expect(noRoute.error.details).toEqual([{ "@type": ERROR_INFO_TYPE, reason: "NOT_FOUND", domain: "effect-a2a" }])
      // An escaped slash is part of the id, decoded as Express decodes it.
      const escaped = expectStatus(yield* get(`${restUrl}/tasks/a%2Fb`), 404, "NOT_FOUND", "TASK_NOT_FOUND")
      expect(escaped.error.message).toBe("Task not found: a/b")
      const unknownTask = yield* get(`${restUrl}/tenant-a/tasks/missing`)
      expectStatus(unknownTask, 404, "NOT_FOUND", "TASK_NOT_FOUND")

      // Still serving.
      const fine = yield* post(
        `${restUrl}/message:send`,
        JSON.stringify({ message: { messageId: "m", role: "ROLE_USER", parts: [{ text: "ok" }] } }),
        v1
      )
      expect(JSON.parse(fine.text).task.status.state).toBe("TASK_STATE_COMPLETED")
    }))

  it.scopedLive("answers in the JSON type the request's Accept asks for, errors too; streams stay text/event-stream", () =>
    Effect.gen(function*() {
      const server = yield* A2AServer.make({ agent, card, maxBodyBytes: 4096 })
      const restUrl = server.urls["HTTP+JSON"]!
      const message = (text: string) =>
        JSON.stringify({ message: { messageId: crypto.randomUUID(), role: "ROLE_USER", parts: [{ text }] } })
      const call = (
        method: string,
        path: string,
        accept: string | undefined,
        body?: string,
        type = "application/json"
      ) =>
        Effect.promise(async () => {
          const response = await fetch(`${restUrl}${path}`, {
            method,
            headers: {
              ...v1,
              ...(accept === undefined ? {} : { accept }),
              ...(body === undefined ? {} : { "content-type": type })
            },
            ...(body === undefined ? {} : { body })
          })
          return { status: response.status, text: await response.text(), headers: response.headers }
        })
      const sdkAccept = "application/a2a+json, application/json"
      for (
        const [accept, type] of [
          ["application/json", "application/json"],
          ["application/a2a+json", "application/a2a+json"],
          [sdkAccept, "application/a2a+json"],
          ["application/a2a+json;q=0.5, application/json", "application/json"],
          ["*/*", "application/json"],
          [undefined, "application/json"]
        ] as const
      ) {
        const sent = yield* call("POST", "/message:send", accept, message("negotiated"))
        expect(sent.status, String(accept)).toBe(200)
        expect(sent.headers.get("content-type"), String(accept)).toBe(type)
        expect(sent.headers.get("vary")).toBe("Accept")
        const task = JSON.parse(sent.text).task
        const fetched = yield* call("GET", `/tasks/${task.id}`, accept)
        expect([fetched.status, fetched.headers.get("content-type")]).toEqual([200, type])
        // Errors: not found, unknown route, malformed path, body too large, no version, a thrown cause.
        expectStatus(yield* call("GET", "/tasks/nope", accept), 404, "NOT_FOUND", "TASK_NOT_FOUND", type)
        const noRoute = expectStatus(yield* call("GET", "/no/such/route", accept), 404, "NOT_FOUND", undefined, type)
        expect(noRoute.error.details).toEqual([{ "@type": ERROR_INFO_TYPE, reason: "NOT_FOUND", domain: "effect-a2a" }])
        expectStatus(yield* call("GET", "/tasks/%ZZ", accept), 400, "INVALID_ARGUMENT", "INVALID_PARAMS", type)
        expectStatus(
          yield* call("POST", "/message:send", accept, "x".repeat(5000)),
          413,
          "INVALID_ARGUMENT",
          "INVALID_PARAMS",
          type
        )
        const unversioned = yield* Effect.promise(() =>
          fetch(`${restUrl}/tasks/nope`, { headers: accept === undefined ? {} : { accept } })
        )
        expect(unversioned.headers.get("content-type")).toBe(type)
      }
      // A stream is an event stream whatever the Accept; a refusal before it starts is JSON.
      const streamed = yield* call("POST", "/message:stream", "text/event-stream", message("streamed"))
      expect(streamed.headers.get("content-type")).toBe("text/event-stream")
      expect(streamed.text).toContain("TASK_STATE_COMPLETED")
      expectStatus(
        yield* call("POST", "/tasks/nope:subscribe", "text/event-stream"),
        404,
        "NOT_FOUND",
        "TASK_NOT_FOUND"
      )
      // A body of either JSON type is read.
      const a2aBody = yield* call(
        "POST",
        "/message:send",
        "application/a2a+json",
        message("typed body"),
        "application/a2a+json"
      )
      expect(JSON.parse(a2aBody.text).task.status.message.parts[0].text).toBe("echo typed body")
    }))

  it.scopedLive("a path that is not valid percent-encoding gets 400 INVALID_ARGUMENT, wherever it is, not the router's empty 404", () =>
    Effect.gen(function*() {
      const server = yield* A2AServer.make({ agent, card })
      const httpServer = yield* NodeHttpServer.make(() => Http.createServer(), { host: "127.0.0.1", port: 0 })
      const mountedUrl = `http://127.0.0.1:${(httpServer.address as HttpServer.TcpAddress).port}`
      const mounted = yield* A2AServer.makeRouter({ agent, card, publicUrl: mountedUrl })
      yield* httpServer.serve(HttpRouter.concat(HttpRouter.empty, mounted.router))
      // Sent as written: a client's URL parser may not let these through.
      const rawGet = (base: string, path: string) =>
        Effect.promise(() =>
          new Promise<{ status: number; text: string; headers: Headers }>((resolve, reject) => {
            const url = new URL(base)
            Http.get({ host: url.hostname, port: url.port, path, headers: v1 }, (response) => {
              let text = ""
              response.setEncoding("utf8")
              response.on("data", (chunk: string) => (text += chunk))
              response.on("end", () =>
                resolve({
                  status: response.statusCode!,
                  text,
                  headers: new Headers(response.headers as Record<string, string>)
                }))
            }).on("error", reject)
          })
        )
      for (const base of [server.url, mountedUrl]) {
        for (
          const path of [
            "/tasks/%C0%AF",
            "/tasks/%",
            "/tasks/%Z1",
            "/tasks/%FF%FE",
            "/%ZZ/tasks/x",
            "/tasks/x/pushNotificationConfigs/%E0%A4%A"
          ]
        ) {
          const answer = yield* rawGet(base, `/a2a/rest${path}`)
          const body = expectStatus(answer, 400, "INVALID_ARGUMENT", "INVALID_PARAMS")
          expect(body.error.message).toBe("The request's path is not valid percent-encoding.")
        }
        // Below the base, an unknown route is still ours to answer.
        const noRoute = expectStatus(yield* rawGet(base, "/a2a/rest/%ZZ"), 404, "NOT_FOUND")
        expect(noRoute.error.details).toEqual([{ "@type": ERROR_INFO_TYPE, reason: "NOT_FOUND", domain: "effect-a2a" }])
      }
    }))

  it.scopedLive("fuzz: generated requests always get a success or a well-formed Status, and the server keeps serving", () =>
    Effect.gen(function*() {
      const server = yield* A2AServer.make({ agent, card, maxBodyBytes: 64 * 1024, shutdownTimeout: "100 millis" })
      const restUrl = server.urls["HTTP+JSON"]!
      const path = FastCheck.oneof(
        FastCheck.constantFrom(
          "/message:send",
          "/message:stream",
          "/tasks",
          "/tasks/x",
          "/tasks/x:cancel",
          "/tasks/x:subscribe",
          "/tasks/x/pushNotificationConfigs",
          "/tasks/x/pushNotificationConfigs/c",
          "/extendedAgentCard",
          "/t/message:send"
        ),
        FastCheck.webPath()
      )
      const message = FastCheck.record({
        message: FastCheck.record({
          messageId: FastCheck.oneof(FastCheck.uuid(), FastCheck.anything()),
          role: FastCheck.oneof(FastCheck.constant("ROLE_USER"), FastCheck.anything()),
          parts: FastCheck.oneof(FastCheck.constant([{ text: "hi" }]), FastCheck.anything())
        }, { requiredKeys: [] })
      }, { requiredKeys: [] }).map((value) => JSON.stringify(value))
      const body = FastCheck.oneof(
        message,
        FastCheck.jsonValue().map((value) => JSON.stringify(value) ?? "null"),
        FastCheck.integer({ min: 100, max: 3000 }).map((depth) => "[".repeat(depth) + "]".repeat(depth)),
        FastCheck.integer({ min: 70_000, max: 100_000 }).map((n) => JSON.stringify({ s: "x".repeat(n) })),
        FastCheck.string()
      )
      const method = FastCheck.constantFrom("GET", "POST", "DELETE")
      const contentType = FastCheck.constantFrom("application/json", "application/a2a+json", "text/plain")
      const samples = FastCheck.sample(FastCheck.tuple(method, path, body, contentType), 60)
      for (const [verb, at, payload, type] of samples) {
        const answer = yield* Effect.promise(async () => {
          const controller = new AbortController()
          const timer = setTimeout(() => controller.abort(), 5_000)
          try {
            const response = await fetch(`${restUrl}${at}`, {
              method: verb,
              headers: { ...v1, "content-type": type },
              ...(verb === "GET" ? {} : { body: payload }),
              signal: controller.signal
            })
            // A stream is read to its first event: a task that waits for input would keep it open.
            const reader = response.body!.getReader()
            const first = await reader.read()
            void reader.cancel()
            return {
              path: new URL(response.url).pathname,
              status: response.status,
              text: first.done ? "" : new TextDecoder().decode(first.value),
              type: response.headers.get("content-type")
            }
          } finally {
            clearTimeout(timer)
          }
        })
        // Only what is below the base is ours: a path that leaves it (`/..`) gets the platform's own 404.
        if (!answer.path.startsWith("/a2a/rest")) expect(answer.status).toBe(404)
        else if (answer.status >= 400) {
          const parsed = statusBody(answer.text)
          expect(parsed.error.code).toBe(answer.status)
          expect(parsed.error.details.some((detail) => detail["@type"] === ERROR_INFO_TYPE)).toBe(true)
          expect(answer.text).not.toContain(secret)
        } else if (answer.type === "text/event-stream") {
          expect(answer.text.startsWith("data: ")).toBe(true)
        } else if (answer.status !== 204) {
          expect(() => JSON.parse(answer.text)).not.toThrow()
        }
      }
      const after = yield* post(
        `${restUrl}/message:send`,
        JSON.stringify({ message: { messageId: "after", role: "ROLE_USER", parts: [{ text: "still here" }] } }),
        v1
      )
      expect(JSON.parse(after.text).task.status.message.parts[0].text).toBe("echo still here")
    }))

  it.scopedLive("the same rules as JSON-RPC: one run per task, and a keyed send runs once (Idempotency-Key header or metadata)", () =>
    Effect.gen(function*() {
      let runs = 0
      const release = yield* Deferred.make<void>()
      const counting: AgentExecutor.Agent = (request) =>
        Effect.gen(function*() {
          runs++
          const text = Part.textOf(request.message.parts)
          if (text === "ask") return AgentExecutor.InputRequired({ question: "which seat?" })
          if (text === "slow") yield* Deferred.await(release)
          return AgentExecutor.completedText(`done ${text}`)
        })
      const server = yield* A2AServer.make({ agent: counting, card, idempotency: {} })
      const restUrl = server.urls["HTTP+JSON"]!
      const send = (text: string, extra: Record<string, unknown> = {}, headers: Record<string, string> = {}) =>
        post(
          `${restUrl}/message:send`,
          JSON.stringify({
            message: { messageId: crypto.randomUUID(), role: "ROLE_USER", parts: [{ text }], ...extra }
          }),
          { ...v1, ...headers }
        )

      const first = JSON.parse((yield* send("keyed", {}, { "Idempotency-Key": "order-1" })).text).task
      const again = JSON.parse((yield* send("keyed", {}, { "Idempotency-Key": "order-1" })).text).task
      expect(again.id).toBe(first.id)
      expect(runs).toBe(1)

      const paused = JSON.parse((yield* send("ask")).text).task
      expect(paused.status.state).toBe("TASK_STATE_INPUT_REQUIRED")
      const continuing = Effect.runFork(send("slow", { taskId: paused.id, contextId: paused.contextId }))
      yield* eventually(server.executor.running, (running) => running === 1)
      const refused = yield* send("slow", { taskId: paused.id, contextId: paused.contextId })
      const body = expectStatus(refused, 400, "FAILED_PRECONDITION", "UNSUPPORTED_OPERATION")
      expect(body.error.message).toContain("is still running")
      yield* Deferred.succeed(release, undefined)
      const continued = yield* Fiber.join(continuing)
      expect(JSON.parse(continued.text).task.status.state).toBe("TASK_STATE_COMPLETED")
    }).pipe(Effect.provide(IdempotencyLedger.layerMemory())))

  it.scopedLive("spans and metrics: a REST request's traceparent parents its run, counted per agent, the shed one included", () => {
    const exporter = new InMemorySpanExporter()
    const Otel = NodeSdk.layer(() => ({ spanProcessor: new SimpleSpanProcessor(exporter) }))
    return Effect.gen(function*() {
      const name = `rest-observed-${process.pid}`
      const server = yield* A2AServer.make({
        agent,
        card: { ...card, name },
        maxInFlight: 1,
        shutdownTimeout: "100 millis"
      })
      const restUrl = server.urls["HTTP+JSON"]!
      const counted = (metric: Metric.Metric.Counter<number>, tags: Record<string, string> = {}) =>
        Effect.map(
          Metric.value(
            Object.entries({ agent: name, ...tags }).reduce((m, [key, value]) => Metric.tagged(m, key, value), metric)
          ),
          (state) => state.count
        )
      const before = yield* Effect.all([
        counted(Observability.serverCompleted),
        counted(Observability.serverShed, { bound: "server" })
      ])
      const traceId = "4bf92f3577b34da6a3ce929d0e0e4736"
      const parentId = "00f067aa0ba902b7"
      const body = (text: string) =>
        JSON.stringify({ message: { messageId: crypto.randomUUID(), role: "ROLE_USER", parts: [{ text }] } })
      const sent = yield* post(`${restUrl}/message:send`, body("traced"), {
        ...v1,
        traceparent: `00-${traceId}-${parentId}-01`
      })
      const task = JSON.parse(sent.text).task
      const execute = exporter.getFinishedSpans().find((span) =>
        span.name === Observability.executeSpanName && span.attributes["a2a.task_id"] === task.id
      )
      expect(execute?.spanContext().traceId).toBe(traceId)
      expect(execute?.parentSpanContext?.spanId).toBe(parentId)

      const controller = new AbortController()
      yield* Effect.addFinalizer(() => Effect.sync(() => controller.abort()))
      fetch(`${restUrl}/message:send`, {
        method: "POST",
        headers: { ...v1, "content-type": "application/json" },
        body: body("hang"),
        signal: controller.signal
      })
        .catch(() => undefined)
      yield* eventually(server.executor.running, (running) => running === 1)
      expect((yield* post(`${restUrl}/message:send`, body("shed"), v1)).status).toBe(429)
      const after = yield* Effect.all([
        counted(Observability.serverCompleted),
        counted(Observability.serverShed, { bound: "server" })
      ])
      expect([after[0] - before[0], after[1] - before[1]]).toEqual([1, 1])
    }).pipe(Effect.provide(Otel))
  })

  it.scopedLive("over the bound: 429 RESOURCE_EXHAUSTED with Retry-After, before anything runs", () =>
    Effect.gen(function*() {
      const server = yield* A2AServer.make({ agent, card, maxInFlight: 1, shutdownTimeout: "100 millis" })
      const restUrl = server.urls["HTTP+JSON"]!
      const controller = new AbortController()
      yield* Effect.addFinalizer(() => Effect.sync(() => controller.abort()))
      const body = (text: string) =>
        JSON.stringify({ message: { messageId: crypto.randomUUID(), role: "ROLE_USER", parts: [{ text }] } })
      fetch(`${restUrl}/message:send`, {
        method: "POST",
        headers: { ...v1, "content-type": "application/json" },
        body: body("hang"),
        signal: controller.signal
      })
        .catch(() => undefined)
      yield* eventually(server.executor.running, (running) => running === 1)
      const shed = yield* post(`${restUrl}/message:send`, body("one more"), v1)
      const parsed = expectStatus(shed, 429, "RESOURCE_EXHAUSTED")
      expect(shed.headers.get("retry-after")).toBe("1")
      expect(parsed.error.details).toContainEqual({
        "@type": "type.googleapis.com/google.rpc.RetryInfo",
        retryDelay: "1s"
      })
      // Reading a task is never shed.
      expectStatus(yield* get(`${restUrl}/tasks/missing`), 404, "NOT_FOUND", "TASK_NOT_FOUND")
    }))

  it.scopedLive("a client that leaves a stream lets go of its place in the bound: the next send is admitted once its run ends", () =>
    Effect.gen(function*() {
      const server = yield* A2AServer.make({ agent, card, maxInFlight: 1, shutdownTimeout: "100 millis" })
      const restUrl = server.urls["HTTP+JSON"]!
      const body = (text: string) =>
        JSON.stringify({ message: { messageId: crypto.randomUUID(), role: "ROLE_USER", parts: [{ text }] } })
      // The client takes the stream's first event and leaves while the run goes on.
      const controller = new AbortController()
      yield* Effect.promise(async () => {
        const response = await fetch(`${restUrl}/message:stream`, {
          method: "POST",
          headers: { ...v1, "content-type": "application/json" },
          body: body("slow"),
          signal: controller.signal
        })
        await response.body!.getReader().read()
        controller.abort()
      })
      // The run holds the place while it runs, as the request that started it did.
      expectStatus(yield* post(`${restUrl}/message:send`, body("one more"), v1), 429, "RESOURCE_EXHAUSTED")
      // Once it ends nothing holds it: a stream left unclosed would hold it for good.
      const admitted = yield* eventually(
        Effect.map(post(`${restUrl}/message:send`, body("one more"), v1), (answer) => answer.status),
        (status) => status !== 429,
        600
      )
      expect(admitted).toBe(200)
    }))

  it.scopedLive("a closing server refuses with 503 UNAVAILABLE and Retry-After, before anything runs", () =>
    Effect.gen(function*() {
      const httpServer = yield* NodeHttpServer.make(() => Http.createServer(), { host: "127.0.0.1", port: 0 })
      const url = `http://127.0.0.1:${(httpServer.address as HttpServer.TcpAddress).port}`
      let called = 0
      const handler = new Proxy({}, {
        get: () => () => {
          called++
          return Promise.reject(new Error("nothing may run while the server shuts down"))
        }
      })
      const router = internalRest.routesOn(HttpRouter.empty, {
        path: "/rest",
        card: {
          capabilities: {},
          supportedInterfaces: [{
            url: `${url}/rest`,
            protocolBinding: "HTTP+JSON",
            protocolVersion: "1.0",
            tenant: ""
          }]
        } as never,
        handler: handler as never,
        subscriptions: internalSubscription.makeSubscriptions(),
        maxBodyBytes: 1024,
        state: { closing: true },
        readBody: internalHttp.platformBodyReader,
        load: undefined
      })
      yield* httpServer.serve(router)
      const refused = yield* post(`${url}/rest/message:send`, "{}", v1)
      expectStatus(refused, 503, "UNAVAILABLE", "UNSUPPORTED_OPERATION")
      expect(refused.headers.get("retry-after")).toBe("1")
      expect(statusBody(refused.text).error.message).toBe("The server is shutting down.")
      expect(called).toBe(0)
    }))

  it.scopedLive("served transports and paths follow the options; makeRouter serves JSON-RPC and HTTP+JSON by default", () =>
    Effect.gen(function*() {
      const restOnly = yield* A2AServer.make({ agent, card, transports: ["HTTP+JSON"], restPath: "/api/" })
      expect(restOnly.urls).toEqual({ "HTTP+JSON": `${restOnly.url}/api` })
      expect(restOnly.card.supportedInterfaces).toEqual([
        { url: `${restOnly.url}/api`, protocolBinding: "HTTP+JSON", tenant: "", protocolVersion: "1.0" }
      ])
      const rpcRefused = yield* post(
        restOnly.rpcUrl,
        JSON.stringify({ jsonrpc: "2.0", id: 1, method: "GetTask", params: { id: "x" } }),
        v1
      )
      expect(rpcRefused.status).toBe(404)
      const client = yield* restClient(restOnly.url)
      const task = (yield* Effect.promise(() => client.sendMessage(request(userMessage("rest only"))))) as Task
      expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)

      const routes = yield* A2AServer.makeRouter({ agent, card, publicUrl: "https://agents.example.com/booking" })
      expect(routes.urls).toEqual({
        JSONRPC: "https://agents.example.com/booking/a2a/jsonrpc",
        "HTTP+JSON": "https://agents.example.com/booking/a2a/rest"
      })
      expect(routes.card.supportedInterfaces.map((i) => [i.protocolBinding, i.protocolVersion]))
        .toEqual([["JSONRPC", "1.0"], ["JSONRPC", "0.3"], ["HTTP+JSON", "1.0"]])
    }))
})

describe("A2AServer's agent card caching", () => {
  it.scopedLive("Last-Modified, and If-Modified-Since answered 304 unless If-None-Match is there to decide", () =>
    Effect.gen(function*() {
      const server = yield* A2AServer.make({ agent, card })
      const cardUrl = `${server.url}${A2AServer.cardPath}`
      const first = yield* get(cardUrl)
      const lastModified = first.headers.get("last-modified")!
      expect(Date.parse(lastModified)).toBeLessThanOrEqual(Date.now())
      expect(Date.now() - Date.parse(lastModified)).toBeLessThan(60_000)
      expect((yield* get(cardUrl, { ...v1, "if-modified-since": lastModified })).status).toBe(304)
      const later = new Date(Date.parse(lastModified) + 60_000).toUTCString()
      const notModified = yield* get(cardUrl, { ...v1, "if-modified-since": later })
      expect(notModified.status).toBe(304)
      expect(notModified.headers.get("last-modified")).toBe(lastModified)
      const earlier = new Date(Date.parse(lastModified) - 1000).toUTCString()
      expect((yield* get(cardUrl, { ...v1, "if-modified-since": earlier })).status).toBe(200)
      expect((yield* get(cardUrl, { ...v1, "if-modified-since": "not a date" })).status).toBe(200)
      // If-None-Match decides alone: a stale tag is a 200 whatever the date says.
      expect((yield* get(cardUrl, { ...v1, "if-none-match": "W/\"stale\"", "if-modified-since": later })).status).toBe(
        200
      )
    }))
})

describe("A2AServer's JSON-RPC errors carry an ErrorInfo", () => {
  it.scopedLive("our own refusals and the SDK's A2A errors have error.data [ErrorInfo]", () =>
    Effect.gen(function*() {
      const server = yield* A2AServer.make({ agent, card })
      const info = (reason: string) => [{ "@type": ERROR_INFO_TYPE, reason, domain: "a2a-protocol.org" }]
      const typed = JSON.parse((yield* post(server.rpcUrl, "{}", { ...v1, "content-type": "text/plain" })).text)
      expect(typed.error).toMatchObject({ code: -32005, data: info("CONTENT_TYPE_NOT_SUPPORTED") })
      const malformed = JSON.parse((yield* post(server.rpcUrl, "{not json", v1)).text)
      expect(malformed.error).toMatchObject({ code: -32700, data: info("INVALID_PARAMS") })
      const rpc = (method: string, params: unknown) =>
        post(server.rpcUrl, JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }), v1)
      const notFound = JSON.parse((yield* rpc("GetTask", { id: "missing" })).text)
      expect(notFound.error).toMatchObject({ code: -32001, data: info("TASK_NOT_FOUND") })
      const invalid = JSON.parse((yield* rpc("SendMessage", { message: "not a message" })).text)
      expect(invalid.error).toMatchObject({ code: -32602, data: info("INVALID_PARAMS") })

      // The idempotency ledger's refusal of a key reused with another request.
      const keyed = yield* A2AServer.make({ agent, card, idempotency: {} })
      const keyedSend = (text: string) =>
        post(
          keyed.rpcUrl,
          JSON.stringify({
            jsonrpc: "2.0",
            id: 1,
            method: "SendMessage",
            params: { message: { messageId: crypto.randomUUID(), role: "ROLE_USER", parts: [{ text }] } }
          }),
          { ...v1, "Idempotency-Key": "order-7" }
        )
      yield* keyedSend("first")
      const conflict = JSON.parse((yield* keyedSend("second")).text)
      expect(conflict.error).toMatchObject({
        code: -32602,
        message: "idempotency key reused with a different request",
        data: info("INVALID_PARAMS")
      })
    }).pipe(Effect.provide(IdempotencyLedger.layerMemory())))
})
