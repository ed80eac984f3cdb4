/**
 * The HTTP+JSON routes of A2A v1.0 (`rest.ts` serves them): each method and
 * path, how its request is read (query, path parameters, body, as the SDK's
 * private `RestTransportHandler` checks them), and what it answers, as an
 * Effect of the request handler.
 *
 * @internal
 */
import {
  type AgentCard,
  AgentCard as AgentCardJson,
  ListTaskPushNotificationConfigsResponse,
  ListTasksResponse,
  type Message,
  SendMessageRequest,
  SendMessageResponse,
  type StreamResponse,
  Task,
  TaskPushNotificationConfig,
  taskStateFromJSON
} from "@a2a-js/sdk"
import { PushNotificationNotSupportedError, RequestMalformedError } from "@a2a-js/sdk/errors"
import type { ServerCallContext } from "@a2a-js/sdk/server"
import * as Effect from "effect/Effect"
import type * as Stream from "effect/Stream"
import * as requestShape from "../../wire/requestShape.js"
import type { Failure, RequestHandler } from "../handler/core.js"

const validateSend = (params: SendMessageRequest): void => {
  if (!params.message) throw new RequestMalformedError("message is required")
  if (!params.message.messageId) throw new RequestMalformedError("message.messageId is required")
}

const historyLengthOf = (value: string): number => {
  const parsed = Number.parseInt(value, 10)
  if (Number.isNaN(parsed)) throw new RequestMalformedError("historyLength must be a valid integer")
  if (parsed < 0) throw new RequestMalformedError("historyLength must be non-negative")
  return parsed
}

const pageSizeOf = (value: string): number => {
  const parsed = Number.parseInt(value, 10)
  if (Number.isNaN(parsed) || String(parsed) !== value.trim()) {
    throw new RequestMalformedError("pageSize must be a valid integer")
  }
  if (parsed < 1 || parsed > 100) throw new RequestMalformedError("pageSize must be between 1 and 100")
  return parsed
}

const present = (value: string | undefined): value is string => value !== undefined && value !== ""

/**
 * The SDK's `serializeListTasksResponse` (private): the page's fields
 * always present, and with `includeArtifacts` every task's `artifacts` too.
 */
const listTasksJson = (response: ListTasksResponse, includeArtifacts: boolean): unknown => {
  const { nextPageToken, pageSize, tasks, totalSize, ...rest } = ListTasksResponse.toJSON(response) as {
    readonly tasks?: ReadonlyArray<Record<string, unknown>>
    readonly nextPageToken?: string
    readonly pageSize?: number
    readonly totalSize?: number
  }
  const listed = tasks ?? []
  return {
    tasks: includeArtifacts
      ? listed.map((task) => task.artifacts === undefined ? { ...task, artifacts: [] } : task)
      : listed,
    nextPageToken: nextPageToken ?? "",
    pageSize: pageSize ?? 0,
    totalSize: totalSize ?? 0,
    ...rest
  }
}

/** @internal */
export type Query = Readonly<Record<string, string | undefined>>

/** A matched request, as its route reads it. @internal */
export interface Call {
  readonly taskId: string
  readonly configId: string
  readonly query: Query
  /** The request's JSON body; undefined when it has none. */
  readonly body: unknown
  readonly context: ServerCallContext
}

/** @internal */
export type Answer =
  | { readonly _tag: "Json"; readonly status: number; readonly body?: unknown }
  | { readonly _tag: "Stream"; readonly events: Stream.Stream<StreamResponse, Failure> }

const json = (body: unknown, status = 200): Answer => ({ _tag: "Json", status, body })

/**
 * A route. `handle` may throw an A2A error while it reads the request: the
 * caller runs it inside the Effect, where the throw is a failure like any.
 *
 * @internal
 */
export interface Route {
  readonly method: string
  /** The path below the base (and below the tenant, when there is one). */
  readonly pattern: RegExp
  /** Starts or follows a run: counted by the bound on work in flight. */
  readonly runs?: boolean
  readonly handle: (handler: RequestHandler, call: Call, card: AgentCard) => Effect.Effect<Answer, Failure>
}

// A body of the wrong shape is refused naming its field, before the SDK's codec coerces it (`requestShape.ts`).
const shaped = <A>(method: string, body: unknown, decode: (body: unknown) => A): A => {
  const problem = typeof body === "object" && body !== null && !Array.isArray(body)
    ? requestShape.paramsProblem(method, body as Record<string, unknown>)
    : "Invalid params: the request body must be a JSON object."
  if (problem !== undefined) throw new RequestMalformedError(problem)
  return decode(body)
}

const sendParams = (body: unknown): SendMessageRequest => {
  const params = shaped("SendMessage", body ?? {}, SendMessageRequest.fromJSON)
  validateSend(params)
  return params
}

const tenantOf = (call: Call): string => call.query.tenant || ""

const subscribe: Route["handle"] = (handler, call) =>
  Effect.succeed({
    _tag: "Stream",
    events: handler.resubscribe({ id: call.taskId, tenant: tenantOf(call) }, call.context)
  })

// The SDK's private `ToProto.messageSendResult`: a message has an id, a task its artifacts.
const sendResponse = (result: Message | Task): Answer =>
  json(SendMessageResponse.toJSON({
    payload: "messageId" in result
      ? { $case: "message" as const, value: result as Message }
      : { $case: "task" as const, value: result as Task }
  }))

const taskPath = "/tasks/(?<taskId>[^/]+?)"
const configPath = `${taskPath}/pushNotificationConfigs`

// In the order of the SDK's `restHandler`, which tries each route, then its tenant variant, before the next.
const routes: ReadonlyArray<Route> = [
  {
    method: "GET",
    pattern: /^\/extendedAgentCard$/,
    handle: (handler, call) =>
      Effect.map(handler.extendedAgentCard(call.context), (card) => json(AgentCardJson.toJSON(card)))
  },
  {
    method: "POST",
    pattern: /^\/message:send$/,
    runs: true,
    handle: (handler, call) => Effect.map(handler.sendMessage(sendParams(call.body), call.context), sendResponse)
  },
  {
    method: "POST",
    pattern: /^\/message:stream$/,
    runs: true,
    handle: (handler, call) =>
      Effect.succeed({ _tag: "Stream", events: handler.sendMessageStream(sendParams(call.body), call.context) })
  },
  { method: "GET", pattern: new RegExp(`^${taskPath}:subscribe$`), runs: true, handle: subscribe },
  { method: "POST", pattern: new RegExp(`^${taskPath}:subscribe$`), runs: true, handle: subscribe },
  {
    method: "POST",
    pattern: new RegExp(`^${taskPath}:cancel$`),
    handle: (handler, call) =>
      Effect.map(
        handler.cancelTask({ id: call.taskId, tenant: tenantOf(call), metadata: {} }, call.context),
        (task) => json(Task.toJSON(task))
      )
  },
  {
    method: "GET",
    pattern: new RegExp(`^${taskPath}$`),
    handle: (handler, call) => {
      const historyLength = call.query.historyLength
      const params = {
        id: call.taskId,
        tenant: tenantOf(call),
        ...(historyLength === undefined ? {} : { historyLength: historyLengthOf(historyLength) })
      }
      return Effect.map(handler.getTask(params, call.context), (task) => json(Task.toJSON(task)))
    }
  },
  {
    method: "GET",
    pattern: /^\/tasks$/,
    handle: (handler, call) => {
      const { query } = call
      const status = query.status
      const includeArtifacts = query.includeArtifacts === "true"
      return Effect.map(
        handler.listTasks({
          tenant: query.tenant || "",
          contextId: query.contextId || "",
          status: status ? taskStateFromJSON(Number.isNaN(Number(status)) ? status : Number(status)) : 0,
          pageSize: present(query.pageSize) ? pageSizeOf(query.pageSize) : undefined,
          pageToken: query.pageToken || "",
          historyLength: present(query.historyLength) ? historyLengthOf(query.historyLength) : undefined,
          statusTimestampAfter: query.statusTimestampAfter || undefined,
          includeArtifacts
        }, call.context),
        (result) => json(listTasksJson(result, includeArtifacts))
      )
    }
  },
  {
    method: "POST",
    pattern: new RegExp(`^${configPath}$`),
    handle: (handler, call, card) => {
      const config = shaped(
        "CreateTaskPushNotificationConfig",
        call.body ?? {},
        (body) => TaskPushNotificationConfig.fromJSON({ ...(body as object), taskId: call.taskId })
      )
      if (!card.capabilities?.pushNotifications) throw new PushNotificationNotSupportedError()
      return Effect.map(
        handler.createPushConfig(config, call.context),
        (created) => json(TaskPushNotificationConfig.toJSON(created), 201)
      )
    }
  },
  {
    method: "GET",
    pattern: new RegExp(`^${configPath}$`),
    handle: (handler, call) =>
      Effect.map(
        handler.listPushConfigs(
          { taskId: call.taskId, pageSize: 0, pageToken: "", tenant: tenantOf(call) },
          call.context
        ),
        (listed) => json(ListTaskPushNotificationConfigsResponse.toJSON(listed))
      )
  },
  {
    method: "GET",
    pattern: new RegExp(`^${configPath}/(?<configId>[^/]+)$`),
    handle: (handler, call) =>
      Effect.map(
        handler.getPushConfig({ taskId: call.taskId, id: call.configId, tenant: tenantOf(call) }, call.context),
        (config) => json(TaskPushNotificationConfig.toJSON(config))
      )
  },
  {
    method: "DELETE",
    pattern: new RegExp(`^${configPath}/(?<configId>[^/]+)$`),
    handle: (handler, call) =>
      Effect.as(
        handler.deletePushConfig({ taskId: call.taskId, id: call.configId, tenant: tenantOf(call) }, call.context),
        { _tag: "Json", status: 204 }
      )
  }
]

/** @internal */
export interface Matched {
  readonly route: Route
  readonly taskId: string
  readonly configId: string
  readonly tenant: string | undefined
}

const tenantPrefix = /^\/(?<tenant>[^/]+)(?<rest>\/.*)$/

// Path parameters are decoded, as Express decodes them; one that cannot be is a malformed request.
const decoded = (value: string | undefined): string => value === undefined ? "" : decodeURIComponent(value)

/**
 * The route of a request, its path parameters decoded; undefined when none
 * matches. Throws when a path parameter is not valid percent-encoding.
 *
 * @internal
 */
export const match = (method: string, path: string): Matched | undefined => {
  const tenanted = tenantPrefix.exec(path)?.groups
  for (const route of routes) {
    if (route.method !== method) continue
    const plain = route.pattern.exec(path)
    if (plain) {
      return {
        route,
        taskId: decoded(plain.groups?.taskId),
        configId: decoded(plain.groups?.configId),
        tenant: undefined
      }
    }
    const below = tenanted?.rest === undefined ? undefined : route.pattern.exec(tenanted.rest)
    if (below) {
      return {
        route,
        taskId: decoded(below.groups?.taskId),
        configId: decoded(below.groups?.configId),
        tenant: decoded(tenanted?.tenant)
      }
    }
  }
  return undefined
}
