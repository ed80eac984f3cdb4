/**
 * `playground --conformance`, the A2A TCK's system under test, driven by the
 * SDK's raw clients on each transport: every scenario the TCK's docs ask of
 * it, by `messageId` prefix.
 */
import {
  type ListTasksRequest,
  type Message,
  Role,
  type SendMessageRequest,
  type StreamResponse,
  type Task,
  TaskState
} from "@a2a-js/sdk"
import { type Client, ClientFactory, ServiceParameters, withA2AExtensions } from "@a2a-js/sdk/client"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import * as A2AServer from "../../src/A2AServer.js"
import * as Cli from "../../src/Cli.js"
import * as conformance from "../../src/demo/conformance.js"
import { factoryOf, reasonOf, settle, transports } from "../fixtures/callers.js"
import { userMessage } from "../fixtures/serverAgents.js"

const serverLayer = (requireExtension: boolean) =>
  Layer.fresh(
    Cli.playgroundLayer({ host: "127.0.0.1", port: 0, logFile: Option.none(), conformance: true, requireExtension })
  )

const clientOn = (transport: A2AServer.Transport) =>
  Effect.flatMap(
    A2AServer.A2AServer,
    (server) =>
      Effect.promise((): Promise<Client> =>
        new ClientFactory({ transports: [factoryOf(transport)] }).createFromUrl(server.url)
      )
  )

/** A message whose id starts with the scenario's prefix, as the TCK makes them. */
const request = (prefix: string, extra: Partial<Message> = {}, returnImmediately = false): SendMessageRequest => ({
  tenant: "",
  message: userMessage("TCK prerequisite task creation", { messageId: `${prefix}-${crypto.randomUUID()}`, ...extra }),
  configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately },
  metadata: {}
})

const send = (client: Client, prefix: string, extra: Partial<Message> = {}) =>
  Effect.promise(() => client.sendMessage(request(prefix, extra)) as Promise<Task>)

const textsOf = (message: Message | undefined) =>
  (message?.parts ?? []).flatMap((part) => (part.content?.$case === "text" ? [part.content.value] : []))

const streamOf = (events: AsyncGenerator<StreamResponse>) =>
  Effect.promise(async () => {
    const all: Array<StreamResponse["payload"]> = []
    for await (const event of events) all.push(event.payload)
    return all
  })

/** What a stream said, in order: states, artifacts' texts, the task. */
const shapeOf = (events: ReadonlyArray<StreamResponse["payload"]>) =>
  events.map((payload) => {
    switch (payload?.$case) {
      case "task":
        return `task ${TaskState[payload.value.status!.state]}`
      case "statusUpdate":
        return TaskState[payload.value.status!.state]
      case "artifactUpdate":
        return `artifact ${textsOf({ parts: payload.value.artifact!.parts } as Message).join("")}`
      default:
        return payload?.$case
    }
  })

const onEach = (name: string, body: (client: Client) => Effect.Effect<void>) => {
  for (const transport of transports) {
    it.live(
      `${name} (${transport})`,
      () => Effect.flatMap(clientOn(transport), body).pipe(Effect.provide(serverLayer(false))),
      30_000
    )
  }
}

describe("playground --conformance", () => {
  onEach("tck-complete-task completes with the TCK's text", (client) =>
    Effect.gen(function*() {
      const task = yield* send(client, "tck-complete-task")
      expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
      expect(textsOf(task.status?.message)).toEqual(["Hello from TCK"])
    }))

  onEach(
    "tck-input-required asks for input, and a follow-up on the task completes it",
    (client) =>
      Effect.gen(function*() {
        const task = yield* send(client, "tck-input-required")
        expect(task.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED)
        const followUp = yield* send(client, "tck-complete-task", { taskId: task.id, contextId: task.contextId })
        expect([followUp.id, followUp.status?.state]).toEqual([task.id, TaskState.TASK_STATE_COMPLETED])
      })
  )

  onEach("tck-artifact-text completes with a text artifact", (client) =>
    Effect.gen(function*() {
      const task = yield* send(client, "tck-artifact-text")
      expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
      expect(task.artifacts.map((a) => textsOf({ parts: a.parts } as Message))).toEqual([["Generated text content"]])
      expect(task.artifacts[0]!.artifactId).not.toBe("")
    }))

  onEach("tck-artifact-file completes with an inline file artifact", (client) =>
    Effect.gen(function*() {
      const task = yield* send(client, "tck-artifact-file")
      const part = task.artifacts[0]?.parts[0]
      expect([part?.filename, part?.mediaType, part?.content?.$case]).toEqual(["output.txt", "text/plain", "raw"])
      expect(part?.content?.$case === "raw" && new TextDecoder().decode(part.content.value)).toBe("tck")
    }))

  onEach("tck-artifact-file-url completes with a file artifact by URL", (client) =>
    Effect.gen(function*() {
      const task = yield* send(client, "tck-artifact-file-url")
      const part = task.artifacts[0]?.parts[0]
      expect([part?.filename, part?.mediaType, part?.content]).toEqual([
        "output.txt",
        "text/plain",
        { $case: "url", value: "https://example.com/output.txt" }
      ])
    }))

  onEach("tck-artifact-data completes with a data artifact", (client) =>
    Effect.gen(function*() {
      const task = yield* send(client, "tck-artifact-data")
      const part = task.artifacts[0]?.parts[0]
      expect(part?.content).toEqual({ $case: "data", value: { key: "value", count: 42 } })
    }))

  onEach("tck-message-response answers with a bare Message, and stores no task", (client) =>
    Effect.gen(function*() {
      const answer = (yield* send(client, "tck-message-response")) as Task | Message
      expect("status" in answer).toBe(false)
      const message = answer as Message
      expect([message.role, message.taskId, textsOf(message)]).toEqual([Role.ROLE_AGENT, "", [
        "Direct message response"
      ]])
      expect(message.messageId).not.toBe("")
      const listed = yield* Effect.promise(() =>
        client.listTasks(
          {
            tenant: "",
            contextId: message.contextId,
            status: TaskState.TASK_STATE_UNSPECIFIED,
            pageToken: "",
            statusTimestampAfter: undefined,
            includeArtifacts: false
          } satisfies ListTasksRequest
        )
      )
      expect(listed.tasks).toEqual([])
    }))

  onEach("tck-message-response streams its Message as the one event", (client) =>
    Effect.gen(function*() {
      const events = yield* streamOf(client.sendMessageStream(request("tck-message-response")))
      expect(shapeOf(events)).toEqual(["message"])
      expect(textsOf(events[0]?.$case === "message" ? events[0].value : undefined)).toEqual(["Direct message response"])
    }))

  onEach(
    "tck-message-response to a send answered at once completes the task it got with the message",
    (client) =>
      Effect.gen(function*() {
        const task = yield* Effect.promise(() =>
          client.sendMessage(request("tck-message-response", {}, true)) as Promise<Task>
        )
        const ended = yield* Effect.promise(() => client.getTask({ id: task.id, tenant: "", historyLength: undefined }))
          .pipe(
            Effect.repeat({ until: (now) => now.status?.state === TaskState.TASK_STATE_COMPLETED, times: 50 }),
            Effect.delay("20 millis")
          )
        expect([ended.status?.state, textsOf(ended.status?.message)]).toEqual([TaskState.TASK_STATE_COMPLETED, [
          "Direct message response"
        ]])
      })
  )

  onEach("tck-reject-task ends REJECTED", (client) =>
    Effect.gen(function*() {
      const task = yield* send(client, "tck-reject-task")
      expect([task.status?.state, textsOf(task.status?.message)]).toEqual([TaskState.TASK_STATE_REJECTED, ["rejected"]])
    }))

  onEach("a prefix it does not know completes, naming the message id", (client) =>
    Effect.gen(function*() {
      const task = yield* send(client, "tck-whatever")
      expect(textsOf(task.status?.message)[0]).toMatch(/^Unhandled messageId prefix: tck-whatever-/)
    }))

  onEach(
    "tck-stream-ordering-001 streams WORKING, its artifact, then COMPLETED, in that order",
    (client) =>
      Effect.gen(function*() {
        const events = yield* streamOf(client.sendMessageStream(request("tck-stream-ordering-001")))
        const shape = shapeOf(events).filter((step) => !String(step).startsWith("task"))
        expect(shape).toEqual(["TASK_STATE_WORKING", "artifact Ordered output", "TASK_STATE_COMPLETED"])
      })
  )

  onEach("tck-stream-artifact-file streams a file artifact", (client) =>
    Effect.gen(function*() {
      const events = yield* streamOf(client.sendMessageStream(request("tck-stream-artifact-file")))
      const artifact = events.flatMap((
        payload
      ) => (payload?.$case === "artifactUpdate" ? [payload.value.artifact!] : []))
      expect(artifact.map((a) => a.parts[0]?.filename)).toEqual(["output.txt"])
    }))

  onEach(
    "test-resubscribe-message-id stays WORKING for twice TCK_STREAMING_TIMEOUT (2 s), then completes for a subscriber",
    (client) =>
      Effect.gen(function*() {
        const started = Date.now()
        const task = yield* Effect.promise(() =>
          client.sendMessage(request("test-resubscribe-message-id", {}, true)) as Promise<Task>
        )
        const now = yield* Effect.promise(() => client.getTask({ id: task.id, tenant: "", historyLength: undefined }))
        expect(now.status?.state).toBe(TaskState.TASK_STATE_WORKING)
        const events = yield* streamOf(client.resubscribeTask({ id: task.id, tenant: "" }))
        expect(shapeOf(events).at(-1)).toBe("TASK_STATE_COMPLETED")
        expect(Date.now() - started).toBeGreaterThanOrEqual(3_900)
      })
  )

  for (const transport of transports) {
    it.live(
      `--require-extension refuses a message without the TCK's extension, and serves one with it (${transport})`,
      () =>
        Effect.gen(function*() {
          const server = yield* A2AServer.A2AServer
          expect(server.card.capabilities?.extensions).toContainEqual(
            expect.objectContaining({ uri: conformance.requiredExtension, required: true })
          )
          const client = yield* clientOn(transport)
          const refused = yield* settle(() => client.sendMessage(request("tck-complete-task")))
          expect(reasonOf(refused)).toBe("EXTENSION_SUPPORT_REQUIRED")
          const serviceParameters = ServiceParameters.create(withA2AExtensions(conformance.requiredExtension))
          const served = yield* settle(() => client.sendMessage(request("tck-complete-task"), { serviceParameters }))
          expect("ok" in served && (served.ok as Task).status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
        }).pipe(Effect.provide(serverLayer(true))),
      30_000
    )
  }
})
