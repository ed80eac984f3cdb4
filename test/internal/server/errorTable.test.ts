/**
 * The error table (`wire/errorTable.ts`) on the wire of each server
 * transport: one test per row per transport, each provoking the error on a
 * real server (127.0.0.1, port 0) with raw requests (fetch, a raw grpc-js
 * client) and reading the code, the status and the ErrorInfo reason as a
 * peer reads them. A row a transport cannot be made to answer through our
 * server says why, and checks that the transport's mapping gives the row.
 */
import {
  CancelTaskRequest,
  GetExtendedAgentCardRequest,
  GetTaskRequest,
  SendMessageRequest,
  type Task,
  TaskPushNotificationConfig
} from "@a2a-js/sdk"
import {
  type A2AError,
  ContentTypeNotSupportedError,
  ERROR_INFO_TYPE,
  InvalidAgentResponseError,
  RequestMalformedError
} from "@a2a-js/sdk/errors"
import {
  buildGrpcErrorMetadata,
  decodeErrorInfo,
  decodeStatus,
  encodeGrpcStatusDetails,
  GRPC_STATUS_CODE,
  GRPC_STATUS_DETAILS_BIN,
  grpcStatusFor
} from "@a2a-js/sdk/errors/grpc"
import { InMemoryTaskStore, type TaskStore } from "@a2a-js/sdk/server"
import { A2AService } from "@a2a-js/sdk/server/grpc"
import { describe, expect, it } from "@effect/vitest"
import * as Grpc from "@grpc/grpc-js"
import { type Context, Effect } from "effect"
import * as A2AServer from "../../../src/A2AServer.js"
import * as AgentExecutor from "../../../src/AgentExecutor.js"
import * as internalGrpc from "../../../src/internal/server/transport/grpc.js"
import * as internalRest from "../../../src/internal/server/transport/rest.js"
import * as internalRpc from "../../../src/internal/server/transport/rpc.js"
import * as ErrorTable from "../../../src/internal/wire/errorTable.js"
import { captureLogs, post, userMessage } from "../../fixtures/serverAgents.js"

type Transport = "JSONRPC" | "HTTP+JSON" | "GRPC"

/** What a peer reads of an error: the code (JSON-RPC's number, the HTTP status, the gRPC status's name), and more. */
interface Wire {
  readonly code: number | string
  /** HTTP+JSON: the body's `error.status`. */
  readonly status?: string
  readonly reason: string | undefined
}

const expected = (row: ErrorTable.Row, transport: Transport): Wire => {
  switch (transport) {
    case "JSONRPC":
      // -32603 carries no data: what failed is the server's, and JSON-RPC's code says all a client can use.
      return { code: row.jsonRpc, reason: row === ErrorTable.rows.InternalError ? undefined : row.reason }
    case "HTTP+JSON":
      return { code: row.http, status: row.httpStatus, reason: row.reason }
    case "GRPC":
      return { code: row.grpc, reason: row.reason }
  }
}

// A task store that fails to load ids starting with "boom": an internal error, on every transport.
const inner = new InMemoryTaskStore()
const failingStore: TaskStore = {
  save: (task, context) => inner.save(task, context),
  load: async (id, context) => {
    if (id.startsWith("boom")) throw new Error("the database is down")
    return inner.load(id, context)
  },
  list: (params, context) => inner.list(params, context)
}

const agent: AgentExecutor.Agent<never> = () => Effect.succeed(AgentExecutor.completedText("done"))

const requiredExtension = "https://example.com/extensions/required"

/** The server's options for a row: most rows need none. */
const optionsFor = (name: ErrorTable.Name): Partial<A2AServer.Options<never, never>> => {
  switch (name) {
    case "ExtendedAgentCardNotConfigured":
      // The card says it has an extended card, and the server was given none.
      return {
        card: {
          name: "errors",
          description: "the error table",
          capabilities: { extendedAgentCard: true, extensions: [] }
        }
      }
    case "ExtensionSupportRequired":
      return {
        card: {
          name: "errors",
          description: "the error table",
          capabilities: {
            extensions: [{ uri: requiredExtension, description: "required", required: true, params: undefined }]
          }
        }
      }
    case "InternalError":
      return { taskStore: failingStore }
    default:
      return {}
  }
}

type Server = Context.Tag.Service<A2AServer.A2AServer>

const v1 = { "A2A-Version": "1.0" }

// ---- JSON-RPC: a raw POST; the error's code and its data's ErrorInfo.

// Only an A2A reason: our own ErrorInfo (a 404's, a 429's) is in another domain.
const reasonIn = (details: unknown): string | undefined =>
  Array.isArray(details)
    ? (details as Array<{ "@type"?: string; reason?: string; domain?: string }>)
      .find((detail) => detail["@type"] === ERROR_INFO_TYPE && detail.domain === "a2a-protocol.org")?.reason
    : undefined

const rpcWire = (answer: { readonly text: string }): Wire => {
  const { error } = JSON.parse(answer.text) as { error: { code: number; data?: unknown } }
  return { code: error.code, reason: reasonIn(error.data) }
}

const rpcCall = (server: Server, method: string, params: unknown, headers: Record<string, string> = v1) =>
  Effect.map(post(server.rpcUrl, JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }), headers), rpcWire)

/** A completed task, made over JSON-RPC: the same store answers every transport. */
const completedTask = (server: Server) =>
  Effect.map(
    post(
      server.rpcUrl,
      JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "SendMessage",
        params: SendMessageRequest.toJSON(sendRequest("hello"))
      }),
      v1
    ),
    (answer) => (JSON.parse(answer.text) as { result: { task: Task } }).result.task
  )

const sendRequest = (text: string, taskId = ""): SendMessageRequest => ({
  tenant: "",
  message: userMessage(text, { taskId }),
  configuration: undefined,
  metadata: {}
})

const pushConfig = (taskId: string) => ({ taskId, id: "config", url: "https://example.com/webhook", token: "t" })

// ---- HTTP+JSON: a raw request; the status, the body's `error.status` and its details' ErrorInfo.

const restCall = (server: Server, method: string, path: string, body?: string, headers: Record<string, string> = v1) =>
  Effect.promise(async () => {
    const response = await fetch(`${server.urls["HTTP+JSON"]}${path}`, {
      method,
      headers: body === undefined ? headers : { "content-type": "application/json", ...headers },
      ...(body === undefined ? {} : { body })
    })
    const { error } = (await response.json()) as { error: { code: number; status: string; details?: unknown } }
    expect(error.code).toBe(response.status)
    return { code: response.status, status: error.status, reason: reasonIn(error.details) } satisfies Wire
  })

// ---- gRPC: a raw unary call; the status code's name and the ErrorInfo of `grpc-status-details-bin`.

const grpcNames = new Map(Object.entries(GRPC_STATUS_CODE).map(([name, code]) => [code as number, name]))

const statusWire = (code: number, metadata: Grpc.Metadata | undefined): Wire => {
  const bin = metadata?.get(GRPC_STATUS_DETAILS_BIN)[0]
  if (bin === undefined) return { code: grpcNames.get(code)!, reason: undefined }
  const status = decodeStatus(Buffer.from(bin as Buffer))
  // The details repeat the status's code: a peer may read either.
  expect(status.code).toBe(code)
  const info = status.details.find((detail) => detail.typeUrl === ERROR_INFO_TYPE)
  const decoded = info === undefined ? undefined : decodeErrorInfo(Buffer.from(info.value))
  return { code: grpcNames.get(code)!, reason: decoded?.domain === "a2a-protocol.org" ? decoded.reason : undefined }
}

const identity = (bytes: Buffer) => bytes

const grpcCall = (
  server: Server,
  path: string,
  bytes: Uint8Array,
  metadata: Record<string, string> = { "a2a-version": "1.0" }
) =>
  Effect.acquireUseRelease(
    Effect.sync(() => new Grpc.Client(server.urls.GRPC!, Grpc.credentials.createInsecure())),
    (client) =>
      Effect.async<Wire>((resume) => {
        const sent = new Grpc.Metadata()
        for (const [key, value] of Object.entries(metadata)) sent.set(key, value)
        client.makeUnaryRequest(
          path,
          identity,
          identity,
          Buffer.from(bytes),
          sent,
          { deadline: Date.now() + 10_000 },
          (error) => {
            resume(
              Effect.succeed(
                error === null ? { code: "OK", reason: undefined } : statusWire(error.code, error.metadata)
              )
            )
          }
        )
      }),
    (client) => Effect.sync(() => client.close())
  )

const grpcSend = (server: Server, request: SendMessageRequest, metadata?: Record<string, string>) =>
  grpcCall(server, A2AService.sendMessage.path, A2AService.sendMessage.requestSerialize(request), metadata)

const getTaskBytes = (id: string) => A2AService.getTask.requestSerialize(GetTaskRequest.fromJSON({ id }))

// ---- What a transport answers an error with, for the rows no request to our server can bring.

const rpcMapped = (error: A2AError): Wire => {
  const mapped = internalRpc.rpcErrorOf(error)
  return { code: mapped.code, reason: reasonIn(mapped.data) }
}

const restMapped = (error: A2AError): Wire => {
  const { error: body } = internalRest.a2aErrorBody(error)
  return { code: body.code, status: body.status, reason: reasonIn(body.details) }
}

// As the SDK's gRPC service maps an error, then through ours.
const grpcMapped = (error: A2AError): Wire => {
  const mapped = internalGrpc.throughTable(
    { decodeStatus, decodeErrorInfo, encodeGrpcStatusDetails, GRPC_STATUS_DETAILS_BIN },
    { code: grpcStatusFor(error), details: error.message, metadata: buildGrpcErrorMetadata(Grpc.Metadata, error)! }
  )
  return statusWire(mapped.code!, mapped.metadata)
}

type Provoke = (server: Server) => Effect.Effect<Wire>

/** A row a transport's server cannot be made to answer: why, and the error its mapping is checked with. */
interface Unprovokable {
  readonly why: string
  readonly error: A2AError
}

type Case = Provoke | Unprovokable

const never = {
  why:
    "no part of this server raises it: the SDK's request handler does not, and an agent's bad answer ends its task FAILED",
  error: new InvalidAgentResponseError()
} satisfies Unprovokable

const noEnvelope = {
  why:
    "HTTP+JSON and gRPC have no JSON-RPC envelope to be invalid: a request they cannot read is a parse error or invalid params",
  error: new RequestMalformedError("Invalid request.")
} satisfies Unprovokable

const cases: { readonly [N in ErrorTable.Name]: Record<Transport, Case> } = {
  TaskNotFound: {
    JSONRPC: (server) => rpcCall(server, "GetTask", { id: "missing" }),
    "HTTP+JSON": (server) => restCall(server, "GET", "/tasks/missing"),
    GRPC: (server) => grpcCall(server, A2AService.getTask.path, getTaskBytes("missing"))
  },
  TaskNotCancelable: {
    JSONRPC: (server) =>
      Effect.flatMap(completedTask(server), (task) => rpcCall(server, "CancelTask", { id: task.id })),
    "HTTP+JSON": (server) =>
      Effect.flatMap(completedTask(server), (task) => restCall(server, "POST", `/tasks/${task.id}:cancel`, "{}")),
    GRPC: (server) =>
      Effect.flatMap(completedTask(server), (task) =>
        grpcCall(
          server,
          A2AService.cancelTask.path,
          A2AService.cancelTask.requestSerialize(CancelTaskRequest.fromJSON({ id: task.id }))
        ))
  },
  PushNotificationNotSupported: {
    JSONRPC: (server) =>
      Effect.flatMap(
        completedTask(server),
        (task) => rpcCall(server, "CreateTaskPushNotificationConfig", pushConfig(task.id))
      ),
    "HTTP+JSON": (server) =>
      Effect.flatMap(
        completedTask(server),
        (task) =>
          restCall(server, "POST", `/tasks/${task.id}/pushNotificationConfigs`, JSON.stringify(pushConfig(task.id)))
      ),
    GRPC: (server) =>
      Effect.flatMap(completedTask(server), (task) =>
        grpcCall(
          server,
          A2AService.createTaskPushNotificationConfig.path,
          A2AService.createTaskPushNotificationConfig.requestSerialize(
            TaskPushNotificationConfig.fromJSON(pushConfig(task.id))
          )
        ))
  },
  // A message to a task that has ended.
  UnsupportedOperation: {
    JSONRPC: (server) =>
      Effect.flatMap(
        completedTask(server),
        (task) => rpcCall(server, "SendMessage", SendMessageRequest.toJSON(sendRequest("more", task.id)))
      ),
    "HTTP+JSON": (server) =>
      Effect.flatMap(
        completedTask(server),
        (task) =>
          restCall(
            server,
            "POST",
            "/message:send",
            JSON.stringify(SendMessageRequest.toJSON(sendRequest("more", task.id)))
          )
      ),
    GRPC: (server) => Effect.flatMap(completedTask(server), (task) => grpcSend(server, sendRequest("more", task.id)))
  },
  ContentTypeNotSupported: {
    JSONRPC: (server) => Effect.map(post(server.rpcUrl, "hello", { ...v1, "content-type": "text/plain" }), rpcWire),
    "HTTP+JSON": (server) =>
      restCall(server, "POST", "/message:send", "hello", { ...v1, "content-type": "text/plain" }),
    GRPC: {
      why: "gRPC's frames are protobuf whatever a part says, and grpc-js refuses another HTTP/2 content type itself; " +
        "the handler does not check parts' media types",
      error: new ContentTypeNotSupportedError()
    }
  },
  InvalidAgentResponse: { JSONRPC: never, "HTTP+JSON": never, GRPC: never },
  ExtendedAgentCardNotConfigured: {
    JSONRPC: (server) => rpcCall(server, "GetExtendedAgentCard", {}),
    "HTTP+JSON": (server) => restCall(server, "GET", "/extendedAgentCard"),
    GRPC: (server) =>
      grpcCall(
        server,
        A2AService.getExtendedAgentCard.path,
        A2AService.getExtendedAgentCard.requestSerialize(GetExtendedAgentCardRequest.fromJSON({}))
      )
  },
  // A message that does not declare the extension the card requires.
  ExtensionSupportRequired: {
    JSONRPC: (server) => rpcCall(server, "SendMessage", SendMessageRequest.toJSON(sendRequest("hello"))),
    "HTTP+JSON": (server) =>
      restCall(server, "POST", "/message:send", JSON.stringify(SendMessageRequest.toJSON(sendRequest("hello")))),
    GRPC: (server) => grpcSend(server, sendRequest("hello"))
  },
  VersionNotSupported: {
    JSONRPC: (server) => rpcCall(server, "GetTask", { id: "missing" }, { "A2A-Version": "9.9" }),
    "HTTP+JSON": (server) => restCall(server, "GET", "/tasks/missing", undefined, { "A2A-Version": "9.9" }),
    GRPC: (server) => grpcCall(server, A2AService.getTask.path, getTaskBytes("missing"), { "a2a-version": "9.9" })
  },
  ParseError: {
    JSONRPC: (server) => Effect.map(post(server.rpcUrl, "{not json", v1), rpcWire),
    "HTTP+JSON": (server) => restCall(server, "POST", "/message:send", "{not json"),
    // A frame that is no protobuf message of the method's type.
    GRPC: (server) => grpcCall(server, A2AService.getTask.path, new Uint8Array([0xff, 0xff, 0xff]))
  },
  InvalidRequest: {
    JSONRPC: (server) =>
      Effect.map(post(server.rpcUrl, JSON.stringify({ jsonrpc: "1.0", id: 1, method: "GetTask" }), v1), rpcWire),
    "HTTP+JSON": noEnvelope,
    GRPC: noEnvelope
  },
  MethodNotFound: {
    JSONRPC: (server) => rpcCall(server, "NoSuchMethod", {}),
    "HTTP+JSON": (server) => restCall(server, "GET", "/no/such/operation"),
    GRPC: (server) => grpcCall(server, "/lf.a2a.v1.A2AService/NoSuchMethod", new Uint8Array())
  },
  InvalidParams: {
    JSONRPC: (server) => rpcCall(server, "SendMessage", { message: "not a message" }),
    "HTTP+JSON": (server) => restCall(server, "POST", "/message:send", "{}"),
    GRPC: (server) => grpcSend(server, { tenant: "", message: undefined, configuration: undefined, metadata: {} })
  },
  InternalError: {
    JSONRPC: (server) => rpcCall(server, "GetTask", { id: "boom-1" }),
    "HTTP+JSON": (server) => restCall(server, "GET", "/tasks/boom-1"),
    GRPC: (server) => grpcCall(server, A2AService.getTask.path, getTaskBytes("boom-1"))
  }
}

const mappedBy: Record<Transport, (error: A2AError) => Wire> = {
  JSONRPC: rpcMapped,
  "HTTP+JSON": restMapped,
  GRPC: grpcMapped
}

const table = [...ErrorTable.a2aRows, ...ErrorTable.standardRows]

describe.each(["JSONRPC", "HTTP+JSON", "GRPC"] as const)("the error table on %s", (transport) => {
  it.each(table.filter((row) => typeof cases[row.name][transport] === "function"))(
    "$name: provoked on a server, answered as the table says",
    (row) =>
      Effect.gen(function*() {
        const server = yield* A2AServer.make({
          agent,
          card: { name: "errors", description: "the error table" },
          ...optionsFor(row.name)
        })
        const answered = yield* (cases[row.name][transport] as Provoke)(server)
        expect(answered).toEqual(expected(row, transport))
        // The internal error's cause stays in the server's log.
      }).pipe(Effect.scoped, Effect.provide(captureLogs().layer), Effect.runPromise)
  )

  it.each(table.filter((row) => typeof cases[row.name][transport] !== "function"))(
    "$name: not raised on this transport by our server; its mapping answers as the table says",
    (row) => {
      const unprovokable = cases[row.name][transport] as Unprovokable
      expect(unprovokable.why).not.toBe("")
      expect(mappedBy[transport](unprovokable.error)).toEqual(expected(row, transport))
    }
  )
})
