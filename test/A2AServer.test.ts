import { SendMessageRequest, TaskState } from "@a2a-js/sdk"
import { TaskNotFoundError } from "@a2a-js/sdk/errors"
import { InMemoryTaskStore, ServerCallContext, UnauthenticatedUser } from "@a2a-js/sdk/server"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, FastCheck, Fiber, Option, Scope } from "effect"
import * as fs from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import * as A2AServer from "../src/A2AServer.js"
import * as AgentExecutor from "../src/AgentExecutor.js"
import * as GuardedRemoteAgent from "../src/GuardedRemoteAgent.js"
import * as IdempotencyLedger from "../src/IdempotencyLedger.js"
import * as Part from "../src/Part.js"
import * as RemoteAgent from "../src/RemoteAgent.js"
import * as RemoteOutcome from "../src/RemoteOutcome.js"
import {
  busListeners,
  captureLogs,
  charging,
  eventually,
  keyed,
  makeClient,
  openStream,
  post,
  rpc,
  seededTask,
  send,
  sendMessage,
  stalledStream,
  takenPort,
  textOf,
  userMessage
} from "./fixtures/serverAgents.js"

const card = { name: "server-test", description: "A2AServer tests" }

const echo: AgentExecutor.Agent = (request) =>
  Effect.gen(function*() {
    const text = Part.textOf(request.message.parts)
    yield* AgentExecutor.status("thinking")
    return AgentExecutor.completedText(`echo ${text}`)
  })

const isJsonRpcError = (text: string): boolean => {
  const body = JSON.parse(text)
  return body.jsonrpc === "2.0" && "id" in body && typeof body.error?.code === "number" &&
    typeof body.error?.message === "string" && !("result" in body)
}

describe("A2AServer", () => {
  it.scopedLive("a streaming follow-up whose client leaves before the first event lets go of the task: it can be continued again", () =>
    Effect.gen(function*() {
      const inner = new InMemoryTaskStore()
      let slow = false
      // Loads that take a while (a remote database under load) keep the first event from coming at once.
      const store = {
        save: (task: Parameters<InMemoryTaskStore["save"]>[0], context: Parameters<InMemoryTaskStore["save"]>[1]) =>
          inner.save(task, context),
        load: async (id: string, context: Parameters<InMemoryTaskStore["load"]>[1]) => {
          if (slow) await new Promise((resolve) => setTimeout(resolve, 300))
          return inner.load(id, context)
        }
      } as InMemoryTaskStore
      const agent: AgentExecutor.Agent = (request) =>
        Effect.sync(() => {
          const text = Part.textOf(request.message.parts)
          return text === "ask"
            ? AgentExecutor.InputRequired({ question: "which seat?" })
            : AgentExecutor.completedText(`done ${text}`)
        })
      const server = yield* A2AServer.make({ agent, card, taskStore: store })
      const client = yield* makeClient(server.url)
      const paused = yield* send(client, "ask")
      const followUp = (text: string) =>
        JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          method: "SendStreamingMessage",
          params: {
            message: { messageId: crypto.randomUUID(), role: "ROLE_USER", taskId: paused.id, parts: [{ text }] }
          }
        })
      slow = true
      const controller = new AbortController()
      const left = fetch(server.rpcUrl, {
        method: "POST",
        headers: { "content-type": "application/json", "A2A-Version": "1.0" },
        body: followUp("ask"),
        signal: controller.signal
      }).then(() => "answered", () => "left")
      yield* Effect.sleep("50 millis")
      controller.abort()
      expect(yield* Effect.promise(() => left)).toBe("left")
      slow = false
      yield* eventually(
        Effect.zip(
          Effect.promise(() => client.getTask({ tenant: "", id: paused.id, historyLength: undefined })),
          server.executor.running
        ),
        // The abandoned follow-up ran: the task paused again, with a new question message.
        ([task, running]) =>
          task.status?.state === TaskState.TASK_STATE_INPUT_REQUIRED && running === 0 &&
          task.status.message?.messageId !== paused.status?.message?.messageId,
        500
      )
      const next = JSON.parse(
        (yield* rpc(server.rpcUrl, "SendMessage", {
          message: { messageId: crypto.randomUUID(), role: "ROLE_USER", taskId: paused.id, parts: [{ text: "12A" }] }
        })).text
      )
      expect(next.error).toBeUndefined()
      expect(next.result.task.status.state).toBe("TASK_STATE_COMPLETED")
    }))

  it.scopedLive.each(
    [
      ["SubscribeToTask", { "A2A-Version": "1.0" }],
      ["tasks/resubscribe", {}]
    ] as const
  )(
    "a subscriber that leaves (%s) lets go of the task's event bus at once, while the task runs on without news",
    ([method, version]) =>
      Effect.gen(function*() {
        const listeners = yield* busListeners
        const gate = yield* Deferred.make<void>()
        const agent: AgentExecutor.Agent = () => Effect.as(Deferred.await(gate), AgentExecutor.completedText("done"))
        const server = yield* A2AServer.make({ agent, card })
        const client = yield* makeClient(server.url)
        const task = yield* send(client, "go", {}, true)
        const before = listeners()
        const { head, leave } = yield* openStream(
          server.rpcUrl,
          JSON.stringify({ jsonrpc: "2.0", id: 1, method, params: { id: task.id } }),
          version,
          task.id
        )
        expect(head).toContain(task.id)
        // The SDK's queue of the stream, and the count of what it delivers to that queue (slowReader.ts).
        expect(listeners()).toBe(before + 2)
        leave()
        // Gone at once, not at the task's next event, which has not come.
        yield* eventually(Effect.sync(listeners), (count) => count === before)
        expect(
          (yield* Effect.promise(() => client.getTask({ tenant: "", id: task.id, historyLength: undefined }))).status
            ?.state
        )
          .toBe(TaskState.TASK_STATE_WORKING)
        yield* Deferred.succeed(gate, undefined)
        yield* eventually(
          Effect.promise(() => client.getTask({ tenant: "", id: task.id, historyLength: undefined })),
          (ended) => ended.status?.state === TaskState.TASK_STATE_COMPLETED
        )
      })
  )

  it.scopedLive("a stream reader that stalls, then leaves: the run's pause is kept, not overwritten by its earlier progress", () =>
    Effect.gen(function*() {
      const big = "x".repeat(32 * 1024)
      const agent: AgentExecutor.Agent = () =>
        Effect.gen(function*() {
          for (let i = 0; i < 400; i++) yield* AgentExecutor.status(`step ${i} ${big}`)
          return AgentExecutor.InputRequired({ question: "which account?" })
        })
      const server = yield* A2AServer.make({ agent, card })
      const stateOf = (id: string) =>
        Effect.map(
          rpc(server.rpcUrl, "GetTask", { id, historyLength: 0 }),
          (answer) => JSON.parse(answer.text).result?.status?.state
        )
      const { socket, taskId } = yield* stalledStream(server.address.port, "go")
      // The run ends while the handler is stalled: the executor writes the pause itself.
      yield* eventually(stateOf(taskId), (state) => state === "TASK_STATE_INPUT_REQUIRED", 500)
      // The reader takes a little more (the handler saves some of the run's earlier progress), then leaves.
      socket.resume()
      yield* Effect.sleep("30 millis")
      socket.destroy()
      yield* Effect.sleep("500 millis")
      expect(yield* stateOf(taskId)).toBe("TASK_STATE_INPUT_REQUIRED")
      const task = JSON.parse((yield* rpc(server.rpcUrl, "GetTask", { id: taskId })).text).result
      expect(task.status.message.parts[0].text).toBe("which account?")
      expect(task.history.some((message: { messageId: string }) => message.messageId === task.status.message.messageId))
        .toBe(true)
    }))

  it.scopedLive("a message to a task whose run is in progress is refused (-32004), before it runs; the run's caller gets its own ending", () =>
    Effect.gen(function*() {
      const ran: Array<string> = []
      const agent: AgentExecutor.Agent<Error> = (request) =>
        Effect.gen(function*() {
          const [command = "", ms = "0"] = (Part.textOf(request.message.parts)).split(" ")
          ran.push(command)
          if (command === "ask") return AgentExecutor.InputRequired({ question: "which seat?" })
          yield* Effect.sleep(`${Number(ms)} millis`)
          return command === "fail"
            ? yield* Effect.fail(new Error("no seat"))
            : AgentExecutor.completedText(`done ${command}`)
        })
      const server = yield* A2AServer.make({ agent, card })
      const client = yield* makeClient(server.url)
      const started = yield* send(client, "work 600", {}, true)
      const message = (text: string) => ({
        message: { messageId: crypto.randomUUID(), role: "ROLE_USER", taskId: started.id, parts: [{ text }] }
      })
      const refused = yield* rpc(server.rpcUrl, "SendMessage", message("fail 0"))
      expect(JSON.parse(refused.text).error).toMatchObject({
        code: -32004,
        message: expect.stringContaining("still running")
      })
      // Through our client the refusal is typed as one, and the parent model is told that nothing ran, not that
      // the outcome is unknown.
      const remote = yield* RemoteAgent.make({ name: "refusing", url: server.url })
      const continued = { parts: [Part.TextPart.make({ text: "fail 0" })], taskId: started.id }
      expect(yield* Effect.flip(remote.send(continued))).toMatchObject({
        reason: "ProtocolError",
        code: -32004,
        protocolError: "UnsupportedOperation",
        delivery: "Refused",
        taskId: started.id
      })
      expect((yield* GuardedRemoteAgent.make(remote).send(continued)).text).toMatch(
        /^REMOTE_REFUSED UnsupportedOperation: the request was refused; nothing ran \(refusing: /
      )
      // A stream is refused the same way, before its first event: a plain JSON-RPC error.
      const streamed = yield* rpc(server.rpcUrl, "SendStreamingMessage", message("fail 0"))
      expect(JSON.parse(streamed.text).error.code).toBe(-32004)
      // v0.3 too.
      const legacy = yield* rpc(server.rpcUrl, "message/send", {
        message: {
          kind: "message",
          messageId: crypto.randomUUID(),
          role: "user",
          taskId: started.id,
          parts: [{ kind: "text", text: "fail 0" }]
        }
      }, "0.3")
      expect(JSON.parse(legacy.text).error.code).toBe(-32004)
      const ended = yield* eventually(
        Effect.promise(() => client.getTask({ tenant: "", id: started.id, historyLength: undefined })),
        (task) => task.status?.state === TaskState.TASK_STATE_COMPLETED
      )
      expect(textOf(ended)).toBe("done work")
      expect(ran).toEqual(["work"])

      // Two follow-ups at once to a paused task: one runs, the other is refused.
      const paused = yield* send(client, "ask")
      expect(paused.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED)
      const answers = yield* Effect.all(
        ["seat 300", "seat 300"].map((text) =>
          rpc(server.rpcUrl, "SendMessage", {
            message: { messageId: crypto.randomUUID(), role: "ROLE_USER", taskId: paused.id, parts: [{ text }] }
          })
        ),
        { concurrency: "unbounded" }
      )
      const bodies = answers.map((answer) => JSON.parse(answer.text))
      expect(bodies.filter((body) => body.error?.code === -32004)).toHaveLength(1)
      expect(bodies.filter((body) => body.result?.task?.status?.state === "TASK_STATE_COMPLETED")).toHaveLength(1)
      expect(ran).toEqual(["work", "ask", "seat"])
      // Once the task is paused again or settled, the hold is gone: a message to a settled task gets the SDK's own answer.
      const after = yield* rpc(server.rpcUrl, "SendMessage", {
        message: { messageId: crypto.randomUUID(), role: "ROLE_USER", taskId: paused.id, parts: [{ text: "seat 0" }] }
      })
      expect(JSON.parse(after.text).error).toMatchObject({
        code: -32004,
        message: expect.stringContaining("terminal state")
      })
    }))

  it.scopedLive("binds port 0 and serves the card at the bound address with ETag and Cache-Control", () =>
    Effect.gen(function*() {
      const server = yield* A2AServer.make({ agent: echo, card })
      expect(server.address.port).toBeGreaterThan(0)
      expect(server.url).toBe(`http://127.0.0.1:${server.address.port}`)
      const response = yield* Effect.promise(() => fetch(`${server.url}${A2AServer.cardPath}`))
      expect(response.status).toBe(200)
      expect(response.headers.get("cache-control")).toBe("public, max-age=3600")
      const etag = response.headers.get("etag")
      expect(etag).toMatch(/^W\/"[0-9a-f]{16}"$/)
      const served = yield* Effect.promise(() => response.json())
      expect(
        served.supportedInterfaces.map((i: { url: string; protocolVersion: string }) => [i.url, i.protocolVersion])
      )
        .toEqual([
          [server.rpcUrl, "1.0"],
          [server.rpcUrl, "0.3"],
          [`${server.url}/a2a/rest`, "1.0"],
          [server.urls.GRPC, "1.0"],
          [server.urls.GRPC, "0.3"]
        ])
      expect(server.rpcUrl).toBe(`${server.url}/a2a/jsonrpc`)
      expect(server.urls).toEqual({
        JSONRPC: server.rpcUrl,
        "HTTP+JSON": `${server.url}/a2a/rest`,
        GRPC: expect.stringMatching(/^127\.0\.0\.1:\d+$/)
      })
      const cached = yield* Effect.promise(() =>
        fetch(`${server.url}${A2AServer.cardPath}`, { headers: { "if-none-match": etag! } })
      )
      expect(cached.status).toBe(304)

      // Without A2A-Version (above) the card is v0.3-shaped, as the SDK's legacy card router serves it.
      expect(served).toMatchObject({ url: server.rpcUrl, preferredTransport: "JSONRPC", protocolVersion: "0.3" })
      expect(response.headers.get("vary")).toBe("A2A-Version")
      const v1 = yield* Effect.promise(() =>
        fetch(`${server.url}${A2AServer.cardPath}`, { headers: { "A2A-Version": "1.0" } })
      )
      const v1Card = yield* Effect.promise(() => v1.json())
      expect(v1Card.name).toBe(card.name)
      expect("url" in v1Card || "protocolVersion" in v1Card).toBe(false)
      // The v1.0 card is proto JSON, which leaves out the empty tenant the v0.3 card writes.
      expect(v1Card.supportedInterfaces).toEqual(
        served.supportedInterfaces.map(({ tenant: _, ...rest }: Record<string, unknown>) => rest)
      )
      expect(v1.headers.get("etag")).not.toBe(etag)
      const v1Stale = yield* Effect.promise(() =>
        fetch(`${server.url}${A2AServer.cardPath}`, { headers: { "A2A-Version": "1.0", "if-none-match": etag! } })
      )
      expect(v1Stale.status).toBe(200)
    }))

  it.scopedLive("a port in use fails with a ServeError that names the address", () =>
    Effect.gen(function*() {
      const port = yield* takenPort
      const error = yield* Effect.flip(Effect.scoped(A2AServer.make({ agent: echo, card, port })))
      expect(error._tag).toBe("ServeError")
      expect(error.message).toBe(`address 127.0.0.1:${port} is in use`)
    }))

  it.scopedLive("streams over SSE; an error before the first event is plain JSON-RPC", () =>
    Effect.gen(function*() {
      const server = yield* A2AServer.make({ agent: echo, card })
      const client = yield* makeClient(server.url)
      const events = yield* Effect.promise(async () => {
        const seen: Array<string> = []
        for await (
          const event of client.sendMessageStream({
            tenant: "",
            message: userMessage("hi"),
            configuration: undefined,
            metadata: {}
          })
        ) {
          seen.push(
            event.payload?.$case === "statusUpdate"
              ? `status:${event.payload.value.status?.state}`
              : String(event.payload?.$case)
          )
        }
        return seen
      })
      expect(events[0]).toBe("task")
      expect(events.at(-1)).toBe(`status:${TaskState.TASK_STATE_COMPLETED}`)

      const unknown = yield* rpc(server.rpcUrl, "SubscribeToTask", { id: crypto.randomUUID() })
      expect(unknown.headers.get("content-type")).toContain("application/json")
      expect(JSON.parse(unknown.text).error.code).toBe(-32001)
    }))

  it.scopedLive("a request without A2A-Version is v0.3, as in the SDK's express handler", () =>
    Effect.gen(function*() {
      const server = yield* A2AServer.make({ agent: echo, card })
      const legacy = yield* post(
        server.rpcUrl,
        JSON.stringify({
          jsonrpc: "2.0",
          id: 7,
          method: "message/send",
          params: {
            message: {
              kind: "message",
              messageId: crypto.randomUUID(),
              role: "user",
              parts: [{ kind: "text", text: "old" }]
            }
          }
        })
      )
      const body = JSON.parse(legacy.text)
      expect(body.result.kind).toBe("task")
      expect(body.result.status.state).toBe("completed")
      // The v1.0 method name is unknown to the v0.3 handler.
      const v1Name = yield* post(
        server.rpcUrl,
        JSON.stringify({ jsonrpc: "2.0", id: 8, method: "GetTask", params: { id: "x" } })
      )
      expect(JSON.parse(v1Name.text).error.code).toBe(-32601)
    }))

  it.scopedLive("a JSON answer (JSON-RPC or the card) declares its length in bytes instead of using chunked framing", () =>
    Effect.gen(function*() {
      const server = yield* A2AServer.make({ agent: echo, card: { ...card, description: "Says «echo» ✓" } })
      const answers = [
        yield* rpc(server.rpcUrl, "SendMessage", {
          message: { messageId: crypto.randomUUID(), role: "ROLE_USER", parts: [{ text: "héllo ✓ 😀" }] }
        }),
        yield* rpc(server.rpcUrl, "NoSuchMethod", {}),
        yield* Effect.promise(async () => {
          const response = await fetch(`${server.url}${A2AServer.cardPath}`)
          return { text: await response.text(), headers: response.headers }
        })
      ]
      expect(JSON.parse(answers[2]!.text).description).toBe("Says «echo» ✓")
      expect(JSON.parse(answers[0]!.text).result.task.status.message.parts[0].text).toBe("echo héllo ✓ 😀")
      expect(JSON.parse(answers[1]!.text).error.code).toBe(-32601)
      for (const answer of answers) {
        expect(answer.headers.get("transfer-encoding")).toBeNull()
        expect(answer.headers.get("content-length")).toBe(String(Buffer.byteLength(answer.text)))
      }
    }))

  it.scopedLive("bad input: body limit, malformed JSON, unknown method, invalid params, unexpected errors", () => {
    const logs = captureLogs()
    return Effect.gen(function*() {
      const server = yield* A2AServer.make({ agent: echo, card, maxBodyBytes: 4096 })
      const tooLarge = yield* post(server.rpcUrl, JSON.stringify({ pad: "x".repeat(5000) }), { "A2A-Version": "1.0" })
      expect(tooLarge.status).toBe(413)
      // RequestMalformed, as HTTP+JSON and gRPC answer it: the same error on every transport.
      expect(JSON.parse(tooLarge.text).error.code).toBe(-32602)
      // A body that goes on past the limit, declared or not: answered, and the connection closed once the rest
      // has gone past what the server drains, rather than read on.
      for (const declared of [true, false]) {
        const ended = yield* Effect.async<{ readonly head: string; readonly sent: number }>((resume) => {
          const socket = net.connect(server.address.port, "127.0.0.1")
          let head = ""
          let sent = 0
          const length = declared ? "Content-Length: 100000000" : "Transfer-Encoding: chunked"
          socket.write(`POST /a2a/jsonrpc HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n${length}\r\n\r\n`)
          const chunk = "x".repeat(16 * 1024)
          const pump = setInterval(() => {
            if (socket.destroyed || sent > 64 * 1024 * 1024) return
            sent += chunk.length
            socket.write(declared ? chunk : `${chunk.length.toString(16)}\r\n${chunk}\r\n`)
          }, 1)
          socket.on("data", (data: Buffer) => {
            head += data.toString("latin1")
          })
          socket.on("error", () => {})
          socket.on("close", () => {
            clearInterval(pump)
            resume(Effect.succeed({ head, sent }))
          })
          return Effect.sync(() => {
            clearInterval(pump)
            socket.destroy()
          })
        }).pipe(Effect.timeout("10 seconds"))
        expect(ended.head).toMatch(/^HTTP\/1\.1 413/)
        expect(ended.sent).toBeLessThan(64 * 1024 * 1024)
      }

      const malformed = yield* post(server.rpcUrl, "{not json", { "A2A-Version": "1.0" })
      expect(JSON.parse(malformed.text).error.code).toBe(-32700)
      const invalidUtf8 = yield* post(server.rpcUrl, new Uint8Array([0x7b, 0xff, 0xfe, 0x7d]), { "A2A-Version": "1.0" })
      expect(JSON.parse(invalidUtf8.text).error.code).toBe(-32700)

      // Nesting past what the SDK's copies of a task can hold is refused before anything runs; below it, served.
      const nested = (depth: number) => {
        let value: unknown = "leaf"
        for (let i = 0; i < depth; i++) value = { inner: value }
        return {
          message: {
            messageId: crypto.randomUUID(),
            role: "ROLE_USER",
            parts: [{ text: "deep" }],
            metadata: { nested: value }
          }
        }
      }
      const roomy = yield* A2AServer.make({ agent: echo, card })
      const deep = JSON.parse((yield* rpc(roomy.rpcUrl, "SendMessage", nested(2000))).text)
      expect(deep.error).toEqual({
        code: -32602,
        message: "Request nested deeper than 256 levels.",
        data: [{
          "@type": "type.googleapis.com/google.rpc.ErrorInfo",
          reason: "INVALID_PARAMS",
          domain: "a2a-protocol.org"
        }]
      })
      expect(deep.id).toBe(1)
      const shallow = JSON.parse((yield* rpc(roomy.rpcUrl, "SendMessage", nested(200))).text)
      expect(shallow.result.task.status.state).toBe("TASK_STATE_COMPLETED")

      const unknown = yield* rpc(server.rpcUrl, "NoSuchMethod", {})
      expect(JSON.parse(unknown.text).error.code).toBe(-32601)
      const invalid = yield* rpc(server.rpcUrl, "GetTask", "not an object")
      expect(JSON.parse(invalid.text).error.code).toBe(-32602)
      // Params the SDK cannot decode are invalid params, not an internal error.
      for (const method of ["SendMessage", "SendStreamingMessage"]) {
        const nullPart = yield* rpc(server.rpcUrl, method, {
          message: { messageId: "m", role: "ROLE_USER", parts: [null] }
        })
        expect(JSON.parse(nullPart.text).error.code).toBe(-32602)
      }
      // 0 and "" are ids like any other, on the streaming methods too.
      for (const id of [0, ""]) {
        const body = JSON.stringify({ jsonrpc: "2.0", id, method: "SubscribeToTask", params: { id: "no-such-task" } })
        const answer = JSON.parse((yield* post(server.rpcUrl, body, { "A2A-Version": "1.0" })).text)
        expect([answer.id, answer.error.code]).toEqual([id, -32001])
      }
      // A page token that does not decode is the caller's mistake, not a store failure.
      const badToken = JSON.parse((yield* rpc(server.rpcUrl, "ListTasks", { pageToken: "%%%" })).text)
      expect(badToken.error.code).toBe(-32602)
      // An id that JSON-RPC does not allow is answered with null, never echoed, in both protocol versions.
      for (const [version, id] of [["1.0", { secret: "x" }], ["0.3", [1]], ["1.0", true]] as const) {
        const body = JSON.stringify({ jsonrpc: "2.0", id, method: "GetTask", params: { id: "t" } })
        const answer = JSON.parse((yield* post(server.rpcUrl, body, { "A2A-Version": version })).text)
        expect(answer.id).toBeNull()
        expect(answer.error.code).toBeLessThan(0)
      }

      // A task store that throws: only an error id goes out, the cause is logged under it.
      const secret = "sk-internal-detail"
      const store = new InMemoryTaskStore()
      const exploding = yield* A2AServer.make({
        agent: echo,
        card,
        taskStore: {
          save: (task, context) => store.save(task, context),
          list: (params, context) => store.list(params, context),
          load: () => Promise.reject(new Error(`db down: ${secret}`))
        }
      })
      const unexpected = yield* rpc(exploding.rpcUrl, "GetTask", { id: "any" })
      expect(unexpected.status).toBe(200)
      const error = JSON.parse(unexpected.text).error
      expect(error.code).toBe(-32603)
      expect(error.message).toMatch(/^Internal error\. \(error_id: [0-9a-f]{12}\)$/)
      expect(Object.keys(error)).toEqual(["code", "message"])
      const errorId = Option.getOrThrow(RemoteOutcome.extractErrorId(error.message))
      const line = logs.lines.find((l) => l.annotations.errorId === errorId)
      // The whole error, with its stack, though the SDK's transport answered it with its message only.
      expect(String(line?.annotations.cause)).toMatch(new RegExp(`^Error: db down: ${secret}\\n\\s+at `))
      expect(unexpected.text).not.toContain(secret)

      // A store that fails while a task runs: the SDK writes the failure into the
      // task's status; only an error id may reach the caller there too.
      let saves = 0
      const savedIds = new Set<string>()
      const failingSave = yield* A2AServer.make({
        agent: echo,
        card,
        taskStore: {
          save: (task, context) => {
            savedIds.add(task.id)
            return ++saves === 2 ? Promise.reject(new Error(`INSERT failed: ${secret}`)) : store.save(task, context)
          },
          list: (params, context) => store.list(params, context),
          load: (taskId, context) => store.load(taskId, context)
        }
      })
      const sent = yield* rpc(
        failingSave.rpcUrl,
        "SendMessage",
        SendMessageRequest.toJSON({
          tenant: "",
          message: userMessage("hello"),
          configuration: undefined,
          metadata: undefined
        })
      )
      expect(sent.text).not.toContain(secret)
      const [taskId] = [...savedIds]
      expect(taskId).toBeDefined()
      // The SDK records the failure in the task once its event loop gives up.
      const fetched = yield* eventually(
        rpc(failingSave.rpcUrl, "GetTask", { id: taskId }),
        (answer) => /TASK_STATE_(FAILED|COMPLETED)/.test(answer.text)
      )
      expect(fetched.text).not.toContain(secret)
      expect(
        logs.lines.some((l) =>
          l.message.includes("Task store save failed") && String(l.annotations.cause).includes(secret)
        )
      ).toBe(true)
    }).pipe(Effect.provide(logs.layer))
  })

  it.scopedLive("fuzz: generated bodies always get a well-formed JSON-RPC error and the server keeps serving", () =>
    Effect.gen(function*() {
      const server = yield* A2AServer.make({ agent: echo, card, maxBodyBytes: 64 * 1024 })
      const wrongTypes = FastCheck.record({
        jsonrpc: FastCheck.oneof(FastCheck.constant("2.0"), FastCheck.anything()),
        id: FastCheck.oneof(FastCheck.integer(), FastCheck.string(), FastCheck.anything()),
        method: FastCheck.oneof(
          FastCheck.constantFrom(
            "SendMessage",
            "GetTask",
            "CancelTask",
            "SubscribeToTask",
            "message/send",
            "tasks/get"
          ),
          FastCheck.string()
        ),
        params: FastCheck.anything()
      }, { requiredKeys: [] }).map((value) => JSON.stringify(value))
      const deep = FastCheck.integer({ min: 100, max: 5000 }).map((depth) => "[".repeat(depth) + "]".repeat(depth))
      const huge = FastCheck.integer({ min: 70_000, max: 200_000 }).map((n) => JSON.stringify({ s: "x".repeat(n) }))
      const bytes = FastCheck.uint8Array({ minLength: 1, maxLength: 200 })
      const body = FastCheck.oneof(
        FastCheck.jsonValue().map((value) => JSON.stringify(value) ?? "null"),
        wrongTypes,
        deep,
        huge,
        bytes,
        FastCheck.string()
      )
      const headers = FastCheck.constantFrom<Record<string, string>>({ "A2A-Version": "1.0" }, {})
      for (const [sample, header] of FastCheck.sample(FastCheck.tuple(body, headers), 50)) {
        const response = yield* post(server.rpcUrl, sample, header)
        if (response.status === 204) {
          // A notification: a request without an id gets no answer.
          expect([
            response.text,
            "id" in JSON.parse(typeof sample === "string" ? sample : new TextDecoder().decode(sample))
          ]).toEqual(["", false])
          continue
        }
        let wellFormed = false
        try {
          const parsed = JSON.parse(response.text)
          wellFormed = isJsonRpcError(response.text) || (parsed.jsonrpc === "2.0" && "result" in parsed)
          // Anything that is not a valid request must be answered with an error.
          if (!isJsonRpcError(response.text)) {
            expect(
              typeof sample === "string" && /"method":"(GetTask|SendMessage|message\/send|tasks\/get)"/.test(sample)
            ).toBe(true)
          }
        } catch {
          // SSE answers only come for valid streaming requests.
          wellFormed = response.text.startsWith("data: ") || response.text.startsWith("event: error")
        }
        expect(wellFormed).toBe(true)
      }
      const client = yield* makeClient(server.url)
      const after = yield* send(client, "still here")
      expect(textOf(after)).toBe("echo still here")
    }))

  it.live("graceful shutdown: running tasks finish within the deadline, the rest end FAILED with an error id", () =>
    Effect.gen(function*() {
      const startedSlow = yield* Deferred.make<void>()
      const startedQuick = yield* Deferred.make<void>()
      const releaseQuick = yield* Deferred.make<void>()
      const agent: AgentExecutor.Agent = (request) => {
        const text = Part.textOf(request.message.parts)
        return text === "slow"
          ? Effect.zipRight(Deferred.succeed(startedSlow, void 0), Effect.never)
          : Effect.zipRight(
            Deferred.succeed(startedQuick, void 0),
            Effect.as(Deferred.await(releaseQuick), AgentExecutor.completedText("quick done"))
          )
      }
      const scope = yield* Scope.make()
      const server = yield* Scope.extend(A2AServer.make({ agent, card, shutdownTimeout: "300 millis" }), scope)
      const client = yield* makeClient(server.url)
      const slow = yield* send(client, "slow", {}, true)
      const quick = yield* send(client, "quick", {}, true)
      yield* Deferred.await(startedSlow)
      yield* Deferred.await(startedQuick)
      const closing = yield* Effect.fork(Scope.close(scope, Exit.void))
      yield* Effect.sleep("50 millis")
      const refused = yield* Effect.promise(() => fetch(`${server.url}${A2AServer.cardPath}`))
      expect([refused.status, refused.headers.get("retry-after")]).toEqual([503, "1"])
      yield* Deferred.succeed(releaseQuick, void 0)
      yield* closing.await
      const context = new (yield* Effect.promise(() => import("@a2a-js/sdk/server"))).ServerCallContext()
      const slowTask = yield* Effect.promise(() => server.taskStore.load(slow.id, context))
      const quickTask = yield* Effect.promise(() => server.taskStore.load(quick.id, context))
      expect(quickTask?.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
      expect(slowTask?.status?.state).toBe(TaskState.TASK_STATE_FAILED)
      expect(textOf(slowTask)).toMatch(/^Agent execution failed\. \(error_id: [0-9a-f]{12}\)$/)
      expect(yield* server.executor.running).toBe(0)
    }))

  it.live("a shutdown whose caller stops waiting still ends the runs; a later shutdown waits for it", () =>
    Effect.gen(function*() {
      const started = yield* Deferred.make<void>()
      const agent: AgentExecutor.Agent = () =>
        Effect.zipRight(
          Deferred.succeed(started, void 0),
          Effect.as(Effect.never, AgentExecutor.completedText("never"))
        )
      const scope = yield* Scope.make()
      const server = yield* Scope.extend(A2AServer.make({ agent, card, shutdownTimeout: "100 millis" }), scope)
      const task = yield* send(yield* makeClient(server.url), "work", {}, true)
      yield* Deferred.await(started)
      const first = yield* Effect.either(Effect.timeout(server.executor.shutdown("300 millis"), "20 millis"))
      expect(first._tag).toBe("Left")
      yield* Scope.close(scope, Exit.void)
      expect(yield* server.executor.running).toBe(0)
      const context = new (yield* Effect.promise(() => import("@a2a-js/sdk/server"))).ServerCallContext()
      const stored = yield* Effect.promise(() => server.taskStore.load(task.id, context))
      expect(stored?.status?.state).toBe(TaskState.TASK_STATE_FAILED)
    }))

  it.live(
    "a run that a shutdown cannot interrupt still ends FAILED with an error id, and a late end does not change it",
    () =>
      Effect.gen(function*() {
        const logs = captureLogs()
        const started = yield* Deferred.make<void>()
        const release = yield* Deferred.make<void>()
        // Uninterruptible, like the acquire step of a resource.
        const agent: AgentExecutor.Agent = () =>
          Effect.zipRight(
            Deferred.succeed(started, void 0),
            Effect.uninterruptible(Effect.as(Deferred.await(release), AgentExecutor.completedText("late")))
          )
        const scope = yield* Scope.make()
        const server = yield* Scope.extend(A2AServer.make({ agent, card, shutdownTimeout: "100 millis" }), scope).pipe(
          Effect.provide(logs.layer)
        )
        const stuck = yield* send(yield* makeClient(server.url), "stuck", {}, true)
        yield* Deferred.await(started)
        yield* Scope.close(scope, Exit.void)
        const context = new (yield* Effect.promise(() => import("@a2a-js/sdk/server"))).ServerCallContext()
        const load = Effect.promise(() => server.taskStore.load(stuck.id, context))
        const failed = yield* load
        expect(failed?.status?.state).toBe(TaskState.TASK_STATE_FAILED)
        const errorId = /error_id: ([0-9a-f]{12})\)$/.exec(textOf(failed))?.[1]
        expect(errorId).toBeDefined()
        const line = logs.lines.find((line) => line.annotations.errorId === errorId)
        expect(String(line?.annotations.cause)).toContain(
          "ShutdownTimeout: the run did not stop when the server shut down"
        )
        // The agent ends after all: the task keeps the end it was given.
        yield* Deferred.succeed(release, void 0)
        yield* Effect.sleep("100 millis")
        expect((yield* load)?.status?.state).toBe(TaskState.TASK_STATE_FAILED)
      }),
    { timeout: 30_000 }
  )

  it.live(
    "a cancel that reaches another replica of a shared store stops the run: its side effect never happens",
    () =>
      Effect.gen(function*() {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "effect-a2a-replicas-"))
        yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true })))
        const taskStore = A2AServer.TaskStoreConfig.Sqlite({ filename: path.join(dir, "tasks.db") })
        const { agent, sideEffects, started } = yield* charging("5 seconds")
        const a = yield* A2AServer.make({ agent, card, taskStore })
        const b = yield* A2AServer.make({ agent, card, taskStore })
        const blocking = yield* Effect.fork(send(yield* makeClient(a.url), "book"))
        const id = yield* Deferred.await(started)
        const canceled = JSON.parse((yield* rpc(b.rpcUrl, "CancelTask", { id })).text)
        expect(canceled.result?.status?.state).toBe("TASK_STATE_CANCELED")
        const final = yield* Fiber.join(blocking)
        expect(final.status?.state).toBe(TaskState.TASK_STATE_CANCELED)
        expect(sideEffects).toEqual([])
        const stored = JSON.parse((yield* rpc(a.rpcUrl, "GetTask", { id })).text)
        expect(stored.result?.status?.state).toBe("TASK_STATE_CANCELED")
      }).pipe(Effect.scoped),
    { timeout: 30_000 }
  )

  it.live("a SQLite file named with a leading // is the file both created and opened", () =>
    Effect.gen(function*() {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "effect-a2a-slashes-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true })))
      const taskStore = A2AServer.TaskStoreConfig.Sqlite({ filename: `/${path.join(dir, "tasks.db")}` })
      const server = yield* A2AServer.make({ agent: echo, card, taskStore })
      const task = yield* send(yield* makeClient(server.url), "remember me")
      expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
      expect(fs.existsSync(path.join(dir, "tasks.db"))).toBe(true)
    }).pipe(Effect.scoped))

  it.live("a SQLite task store keeps tasks across a restart; its table is created once, idempotently", () =>
    Effect.gen(function*() {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "effect-a2a-server-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true })))
      const taskStore = A2AServer.TaskStoreConfig.Sqlite({ filename: path.join(dir, "tasks.db") })

      const first = yield* Scope.make()
      const before = yield* Scope.extend(A2AServer.make({ agent: echo, card, taskStore }), first)
      const task = yield* send(yield* makeClient(before.url), "remember me")
      expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
      yield* Scope.close(first, Exit.void)

      const second = yield* Scope.make()
      const after = yield* Scope.extend(A2AServer.make({ agent: echo, card, taskStore }), second)
      expect(after.address.port).not.toBe(0)
      const client = yield* makeClient(after.url)
      const loaded = yield* Effect.promise(() => client.getTask({ tenant: "", id: task.id, historyLength: undefined }))
      expect(loaded.id).toBe(task.id)
      expect(loaded.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
      expect(textOf(loaded)).toBe("echo remember me")
      yield* Scope.close(second, Exit.void)
    }).pipe(Effect.scoped))

  it.live("a database task store that cannot be set up fails the layer with TaskStoreError", () =>
    Effect.gen(function*() {
      const memory = yield* Effect.flip(Effect.scoped(A2AServer.make({
        agent: echo,
        card,
        taskStore: A2AServer.TaskStoreConfig.Sqlite({ filename: ":memory:" })
      })))
      expect(memory._tag).toBe("TaskStoreError")
      const unreachable = yield* Effect.flip(Effect.scoped(A2AServer.make({
        agent: echo,
        card,
        taskStore: A2AServer.TaskStoreConfig.Sqlite({
          filename: path.join(os.tmpdir(), "no-such-dir-effect-a2a", "t.db")
        })
      })))
      expect(unreachable).toMatchObject({ _tag: "TaskStoreError", reason: "Migration" })
    }))

  describe("a task store that forgets", () => {
    const errorCode = (response: { readonly text: string }) => JSON.parse(response.text).error?.code
    const getTask = (url: string, id: string) => rpc(url, "GetTask", { id })
    const anonymous = new ServerCallContext({ user: new UnauthenticatedUser() })

    it.scopedLive("a task forgotten beyond maxFinished is TaskNotFound, as an unknown id; a running one is kept", () =>
      Effect.gen(function*() {
        const release = yield* Deferred.make<void>()
        const agent: AgentExecutor.Agent = (request) =>
          Part.textOf(request.message.parts) === "hold"
            ? Effect.as(Deferred.await(release), AgentExecutor.completedText("released"))
            : echo(request)
        const server = yield* A2AServer.make({
          agent,
          card,
          taskStore: A2AServer.TaskStoreConfig.Memory({ maxFinished: 2 })
        })
        const client = yield* makeClient(server.url)
        const held = yield* send(client, "hold", {}, true)
        const [first, second, third] = [
          yield* send(client, "one"),
          yield* send(client, "two"),
          yield* send(client, "three")
        ]
        for (const task of [first, second, third]) expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)

        const forgotten = yield* Effect.promise(() =>
          client.getTask({ tenant: "", id: first.id, historyLength: undefined }).then(
            () => undefined,
            (error: unknown) => error
          )
        )
        expect(forgotten).toBeInstanceOf(TaskNotFoundError)
        expect(errorCode(yield* getTask(server.rpcUrl, first.id))).toBe(-32001)
        expect(errorCode(yield* getTask(server.rpcUrl, crypto.randomUUID()))).toBe(-32001)
        expect(errorCode(yield* rpc(server.rpcUrl, "CancelTask", { id: first.id }))).toBe(-32001)
        const followUp = yield* rpc(
          server.rpcUrl,
          "SendMessage",
          SendMessageRequest.toJSON({
            tenant: "",
            message: userMessage("again", { taskId: first.id, contextId: first.contextId }),
            configuration: undefined,
            metadata: {}
          })
        )
        expect(errorCode(followUp)).toBe(-32001)
        for (const kept of [second, third]) {
          const loaded = yield* Effect.promise(() =>
            client.getTask({ tenant: "", id: kept.id, historyLength: undefined })
          )
          expect(textOf(loaded)).toBe(`echo ${kept.id === second.id ? "two" : "three"}`)
        }

        // Older than every ended task, and kept while it runs; once ended it is the newest of them.
        const running = yield* Effect.promise(() =>
          client.getTask({ tenant: "", id: held.id, historyLength: undefined })
        )
        expect(running.status?.state).toBe(TaskState.TASK_STATE_WORKING)
        yield* Deferred.succeed(release, void 0)
        const ended = yield* eventually(
          Effect.promise(() => client.getTask({ tenant: "", id: held.id, historyLength: undefined })),
          (task) => task.status?.state === TaskState.TASK_STATE_COMPLETED
        )
        expect(textOf(ended)).toBe("released")
        expect(errorCode(yield* getTask(server.rpcUrl, second.id))).toBe(-32001)
        expect(JSON.parse((yield* getTask(server.rpcUrl, third.id)).text).result?.id).toBe(third.id)
      }))

    it.scopedLive("the default store is the bounded one: beyond 10,000 ended tasks the oldest is forgotten", () =>
      Effect.gen(function*() {
        const server = yield* A2AServer.make({ agent: echo, card })
        expect(server.taskStore).not.toBeInstanceOf(InMemoryTaskStore)
        const first = yield* send(yield* makeClient(server.url), "first")
        const later = { ...first, history: [], artifacts: [] }
        yield* Effect.promise(async () => {
          for (let i = 0; i < 10_000; i++) await server.taskStore.save({ ...later, id: `later-${i}` }, anonymous)
        })
        expect(errorCode(yield* getTask(server.rpcUrl, first.id))).toBe(-32001)
        expect(JSON.parse((yield* getTask(server.rpcUrl, "later-0")).text).result?.id).toBe("later-0")
      }))

    it.scopedLive("Unbounded keeps every task: beyond 10,000 ended tasks the first is still found", () =>
      Effect.gen(function*() {
        const server = yield* A2AServer.make({ agent: echo, card, taskStore: A2AServer.TaskStoreConfig.Unbounded() })
        expect(server.taskStore).not.toBeInstanceOf(InMemoryTaskStore)
        const task = yield* send(yield* makeClient(server.url), "kept")
        const later = { ...task, history: [], artifacts: [] }
        yield* Effect.promise(async () => {
          for (let i = 0; i < 10_000; i++) await server.taskStore.save({ ...later, id: `later-${i}` }, anonymous)
        })
        expect(JSON.parse((yield* getTask(server.rpcUrl, task.id)).text).result?.id).toBe(task.id)
      }))

    it.scopedLive("a repeat of a keyed request whose task was forgotten answers the task as it ended, without running again", () =>
      Effect.gen(function*() {
        let runs = 0
        const agent: AgentExecutor.Agent = (request) =>
          Effect.suspend(() => {
            runs++
            return echo(request)
          })
        const server = yield* A2AServer.make({
          agent,
          card,
          taskStore: A2AServer.TaskStoreConfig.Memory({ maxFinished: 1 }),
          idempotency: {}
        })
        const client = yield* makeClient(server.url)
        const original = yield* sendMessage(client, keyed("book", "key-1"))
        yield* send(client, "another")
        expect(errorCode(yield* getTask(server.rpcUrl, original.id))).toBe(-32001)
        const repeat = yield* sendMessage(client, keyed("book", "key-1"))
        expect(runs).toBe(2)
        expect(repeat.id).toBe(original.id)
        expect(repeat.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
        expect(textOf(repeat)).toBe("echo book")
        // The ledger answered it: the store does not have the task back.
        expect(errorCode(yield* getTask(server.rpcUrl, original.id))).toBe(-32001)
      }).pipe(Effect.provide(IdempotencyLedger.layerMemory({ pollInterval: "10 millis" }))))

    it.live(
      "a SQLite store with retention deletes ended tasks past it, at start-up and then periodically; paused and running ones stay",
      () =>
        Effect.gen(function*() {
          const dir = fs.mkdtempSync(path.join(os.tmpdir(), "effect-a2a-retention-"))
          yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true })))
          const filename = path.join(dir, "tasks.db")
          const twoHoursAgo = new Date(Date.now() - 2 * 3600_000).toISOString()
          const seeded = (id: string, state: TaskState) => seededTask(id, state, twoHoursAgo)
          const seeding = yield* Scope.make()
          const seeder = yield* Scope.extend(
            A2AServer.make({ agent: echo, card, taskStore: A2AServer.TaskStoreConfig.Sqlite({ filename }) }),
            seeding
          )
          yield* Effect.promise(async () => {
            await seeder.taskStore.save(seeded("old-done", TaskState.TASK_STATE_COMPLETED), anonymous)
            await seeder.taskStore.save(seeded("old-failed", TaskState.TASK_STATE_FAILED), anonymous)
            await seeder.taskStore.save(seeded("old-input", TaskState.TASK_STATE_INPUT_REQUIRED), anonymous)
            await seeder.taskStore.save(seeded("old-working", TaskState.TASK_STATE_WORKING), anonymous)
            expect((await seeder.taskStore.load("old-done", anonymous))?.id).toBe("old-done")
          })
          const recent = yield* send(yield* makeClient(seeder.url), "recent")
          yield* Scope.close(seeding, Exit.void)

          const server = yield* A2AServer.make({
            agent: echo,
            card,
            taskStore: A2AServer.TaskStoreConfig.Sqlite({ filename, retention: "1 hour" })
          })
          const load = (id: string) => Effect.promise(() => server.taskStore.load(id, anonymous))
          yield* eventually(load("old-done"), (task) => task === undefined)
          expect(yield* load("old-failed")).toBeUndefined()
          expect((yield* load("old-input"))?.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED)
          expect((yield* load("old-working"))?.status?.state).toBe(TaskState.TASK_STATE_WORKING)
          expect((yield* load(recent.id))?.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)

          // A short retention: a task run through the server goes at a later round, not only at start-up.
          const quick = yield* A2AServer.make({
            agent: echo,
            card,
            taskStore: A2AServer.TaskStoreConfig.Sqlite({ filename, retention: "1 second" })
          })
          const task = yield* send(yield* makeClient(quick.url), "brief")
          expect(JSON.parse((yield* getTask(quick.rpcUrl, task.id)).text).result?.id).toBe(task.id)
          yield* eventually(getTask(quick.rpcUrl, task.id), (response) => errorCode(response) === -32001, 500)
          expect((yield* load("old-input"))?.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED)
        }).pipe(Effect.scoped),
      { timeout: 30_000 }
    )
  })
})
