/**
 * The receiver of a remote agent's push notifications: the webhook's
 * `HttpApp`, the per-task tokens it checks, and the delivery of what it
 * decodes to whoever waits for a task's outcome.
 *
 * @internal
 */
import { StreamResponse, type TaskState, type TaskStatus } from "@a2a-js/sdk"
import { legacyPushNotificationToV1StreamResponse } from "@a2a-js/sdk/compat/v0_3"
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as FiberId from "effect/FiberId"
import * as Option from "effect/Option"
import * as PubSub from "effect/PubSub"
import * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import { createHash, randomBytes, randomUUID, timingSafeEqual } from "node:crypto"
import type * as PushReceiver from "../../../PushReceiver.js"
import type * as RemoteEvent from "../../../RemoteEvent.js"
import type * as RemoteOutcome from "../../../RemoteOutcome.js"
import { hostForUrl, ListenError } from "../../listen.js"
import { taskIdOf } from "../../wire/streamResponse.js"
import * as taskState from "../../wire/taskState.js"
import { initialState, type State, toEvents } from "../call/stream.js"
import { view } from "../call/task.js"

/** The header the SDK's sender writes a config's token in. @internal */
export const tokenHeader = "x-a2a-notification-token"

const defaultMaxTasks = 10_000
const defaultMaxBodyBytes = 1024 * 1024

/** How far a task has gone, for telling a stale status from a newer one. */
const rank = (state: TaskState | undefined): number =>
  taskState.isTerminal(state)
    ? 3
    : taskState.isPaused(state)
    ? 2
    : taskState.isRunning(state)
    ? taskState.runningState(state) === "Submitted" ? 0 : 1
    : -1

/**
 * Whether `next` says nothing newer than `last`: nothing follows an end; a
 * status older than the last seen is stale, and one of the same time is a
 * repeat unless it goes further. Without timestamps, only further counts.
 */
const stale = (last: TaskStatus, next: TaskStatus): boolean => {
  if (taskState.isTerminal(last.state)) return true
  const before = Date.parse(last.timestamp ?? "")
  const after = Date.parse(next.timestamp ?? "")
  if (!Number.isNaN(before) && !Number.isNaN(after) && after !== before) return after < before
  return rank(next.state) <= rank(last.state)
}

interface TaskEntry {
  // The registration's, once a notification presents its token: a waiter may have made the entry first.
  agent: string
  readonly state: State
  last: TaskStatus | undefined
  outcome: Deferred.Deferred<RemoteOutcome.RemoteOutcome>
}

interface TokenEntry {
  readonly hash: Buffer
  readonly agent: string
  taskId: string | undefined
}

const digest = (token: string): Buffer => createHash("sha256").update(token).digest()

/** The token a notification presents: the SDK's header, or a bearer credential. */
const presented = (headers: Readonly<Record<string, string | undefined>>): string | undefined => {
  const token = headers[tokenHeader]
  if (token !== undefined && token !== "") return token
  const authorization = headers["authorization"]
  const match = authorization === undefined ? null : /^bearer\s+(\S+)\s*$/i.exec(authorization)
  return match?.[1]
}

const statusOf = (response: StreamResponse): TaskStatus | undefined => {
  const payload = response.payload
  return payload?.$case === "task" || payload?.$case === "statusUpdate" ? payload.value.status : undefined
}

/** Evicts the oldest entries of a map held in insertion order, past `max`. */
const bound = <K, V>(map: Map<K, V>, max: number): void => {
  for (const key of map.keys()) {
    if (map.size <= max) return
    map.delete(key)
  }
}

/**
 * A notification's `StreamResponse`: A2A v1.0's ProtoJSON, or a v0.3 event
 * (a `kind` names it), as the SDK's own converters read them.
 */
const decode = (body: unknown): StreamResponse =>
  typeof body === "object" && body !== null && typeof (body as { kind?: unknown }).kind === "string"
    ? legacyPushNotificationToV1StreamResponse(body)
    : StreamResponse.fromJSON(body)

const answer = (status: number, text?: string) =>
  text === undefined ? HttpServerResponse.empty({ status }) : HttpServerResponse.text(text, { status })

/** A receiver whose registrations name `url`. @internal */
export const make = (options: PushReceiver.Options): Effect.Effect<PushReceiver.PushReceiver> =>
  Effect.gen(function*() {
    const name = options.name ?? "push"
    const maxTasks = options.maxTasks ?? defaultMaxTasks
    const maxBodyBytes = options.maxBodyBytes ?? defaultMaxBodyBytes
    const tokens = new Map<string, TokenEntry>()
    const tasks = new Map<string, TaskEntry>()
    const events = yield* PubSub.sliding<RemoteEvent.RemoteEvent>(options.eventCapacity ?? 1024)

    const entryOf = (taskId: string, agent: string): TaskEntry => {
      let entry = tasks.get(taskId)
      if (entry === undefined) {
        entry = {
          agent,
          state: initialState("SubscribeToTask", { taskId, contextId: "" }),
          last: undefined,
          outcome: Deferred.unsafeMake(FiberId.none)
        }
        tasks.set(taskId, entry)
        bound(tasks, maxTasks)
      }
      return entry
    }

    const register: PushReceiver.PushReceiver["register"] = (registration) =>
      Effect.sync(() => {
        const token = randomBytes(32).toString("base64url")
        const hash = digest(token)
        const agent = registration?.agent ?? name
        const taskId = registration?.taskId
        tokens.set(hash.toString("base64url"), { hash, agent, taskId })
        bound(tokens, maxTasks)
        if (taskId !== undefined) entryOf(taskId, agent)
        return { id: randomUUID(), url: options.url, token: Redacted.make(token), taskId }
      })

    /** The registration of a token, compared in constant time. */
    const check = (token: string | undefined): TokenEntry | undefined => {
      if (token === undefined) return undefined
      const hash = digest(token)
      const entry = tokens.get(hash.toString("base64url"))
      return entry !== undefined && timingSafeEqual(entry.hash, hash) ? entry : undefined
    }

    /** Folds one notification into its task and hands its events on; none for a stale one. */
    const deliver = (entry: TaskEntry, response: StreamResponse) =>
      Effect.gen(function*() {
        const status = statusOf(response)
        if (
          entry.last !== undefined &&
          (status !== undefined ? stale(entry.last, status) : taskState.isTerminal(entry.last.state))
        ) {
          return "stale" as const
        }
        const decoded = yield* Effect.either(
          toEvents(entry.agent, view(entry.agent, "SubscribeToTask"), entry.state, response)
        )
        if (Either.isLeft(decoded)) return decoded.left.detail
        if (status !== undefined) {
          // A task that goes on after a pause (input given) has a new outcome to wait for.
          if (entry.last !== undefined && taskState.isPaused(entry.last.state) && taskState.isRunning(status.state)) {
            entry.outcome = yield* Deferred.make<RemoteOutcome.RemoteOutcome>()
            entry.state.finished = false
          }
          entry.last = status
        }
        for (const event of decoded.right) {
          if (event._tag === "Finished") yield* Deferred.succeed(entry.outcome, event.outcome)
        }
        yield* PubSub.publishAll(events, decoded.right)
        return "delivered" as const
      })

    const handle = (request: HttpServerRequest.HttpServerRequest) =>
      Effect.gen(function*() {
        if (request.method !== "POST") return answer(405)
        const token = check(presented(request.headers))
        if (token === undefined) {
          yield* Effect.logWarning("push notification refused: missing or wrong token")
          return answer(401)
        }
        const length = Number(request.headers["content-length"] ?? 0)
        if (length > maxBodyBytes) return answer(413)
        const body = yield* Effect.either(request.text)
        if (Either.isLeft(body) || body.right.length > maxBodyBytes) return answer(400, "unreadable body")
        let response: StreamResponse
        try {
          response = decode(JSON.parse(body.right))
        } catch (error) {
          yield* Effect.logWarning(`push notification refused: the body is not a StreamResponse: ${String(error)}`)
          return answer(400, "the body is not a StreamResponse")
        }
        const taskId = taskIdOf(response)
        if (taskId === undefined) {
          yield* Effect.logWarning("push notification refused: no task in the body")
          return answer(400, "the body is not a StreamResponse of a task")
        }
        if (token.taskId !== undefined && token.taskId !== taskId) {
          yield* Effect.logWarning(`push notification refused: a token of task ${token.taskId} for task ${taskId}`)
          return answer(401)
        }
        token.taskId = taskId
        if (response.payload?.$case === "message") {
          // A message inside a task says nothing of how the task ends.
          yield* Effect.logDebug(`push notification of task ${taskId}: a message, not delivered`)
          return answer(200)
        }
        const entry = entryOf(taskId, token.agent)
        entry.agent = token.agent
        const result = yield* deliver(entry, response)
        if (result === "stale") {
          yield* Effect.logDebug(`push notification of task ${taskId} dropped: a repeat or older than the last seen`)
          return answer(200)
        }
        if (result !== "delivered") {
          yield* Effect.logWarning(`push notification of task ${taskId} refused: ${result}`)
          return answer(400, result)
        }
        return answer(200)
      }).pipe(Effect.annotateLogs({ receiver: name }))

    const app = Effect.flatMap(HttpServerRequest.HttpServerRequest, handle)

    return {
      url: options.url,
      app,
      register,
      outcome: (taskId) => Effect.suspend(() => Deferred.await(entryOf(taskId, name).outcome)),
      delivered: (taskId) =>
        Effect.suspend(() => {
          const entry = tasks.get(taskId)
          return entry === undefined ? Effect.succeed(Option.none()) : Deferred.poll(entry.outcome).pipe(
            Effect.flatMap(Option.match({ onNone: () => Effect.succeedNone, onSome: Effect.asSome }))
          )
        }),
      subscribe: PubSub.subscribe(events)
    }
  })

// Loaded when a receiver is served, not with the module: one mounted in the user's router never loads them.
const nodePieces = Effect.promise(() =>
  Promise.all([import("@effect/platform-node/NodeHttpServer"), import("node:http")])
)

/** A receiver served on a Node server of its own, for the scope. @internal */
export const serve = (
  options: PushReceiver.ServeOptions
): Effect.Effect<PushReceiver.PushReceiver, ListenError, Scope.Scope> =>
  Effect.gen(function*() {
    const [NodeHttpServer, Http] = yield* nodePieces
    const host = options.host ?? "127.0.0.1"
    const port = options.port ?? 0
    const path = options.path ?? "/a2a/push"
    const server = yield* NodeHttpServer.make(() => Http.createServer(), { host, port }).pipe(
      Effect.mapError((error) => new ListenError(error.cause, `${host}:${port}`))
    )
    const address = server.address._tag === "TcpAddress" ? server.address : { hostname: host, port }
    const url = options.publicUrl ?? `http://${hostForUrl(address.hostname)}:${address.port}${path}`
    const receiver = yield* make({ ...options, url })
    yield* server.serve(HttpRouter.empty.pipe(HttpRouter.all(path as HttpRouter.PathInput, receiver.app)))
    return receiver
  })
