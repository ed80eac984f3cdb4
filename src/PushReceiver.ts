/**
 * The webhook a remote agent pushes a task's notifications to (A2A §4.3,
 * §13.2), received with proof and without duplicates.
 *
 * Each registration has a fresh random token (32 bytes); a notification
 * must present it in `X-A2A-Notification-Token`, as the SDK's sender writes
 * it, or as `Authorization: Bearer`, compared in constant time: a wrong or
 * missing one is answered 401 and nothing is delivered. A body that is not a
 * task's `StreamResponse` (ProtoJSON, as A2A v1.0 pushes it) is answered 400,
 * logged, and nothing is delivered (a v0.3 event, named by its `kind`, is
 * read too, through the SDK's v0.3 converter). A status older than or equal to the last
 * seen for its task (a repeat, or one overtaken) is dropped and still
 * answered 2xx, so the sender does not retry it. Every notification is
 * answered at once: waiters are woken, never waited for.
 *
 * @since 0.1.0
 */
import type * as HttpApp from "@effect/platform/HttpApp"
import type { ServeError } from "@effect/platform/HttpServerError"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Option from "effect/Option"
import type * as Queue from "effect/Queue"
import type * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import { lazyModule } from "./internal/lazyModule.js"
import type * as RemoteEvent from "./RemoteEvent.js"
import type * as RemoteOutcome from "./RemoteOutcome.js"

// The receiver's code (an HTTP route, a Node server) loads when a receiver is made: a client that imports the index
// and receives no pushes loads none of it.
const internalReceiver = lazyModule(() => import("./internal/client/push/pushReceiver.js"))

/**
 * What a remote agent is given to push one task's notifications: the URL
 * and the token to present.
 *
 * @example
 * ```ts
 * import { Effect, Redacted } from "effect"
 * import { PushReceiver } from "effect-a2a"
 *
 * declare const receiver: PushReceiver.PushReceiver
 * // the config A2A's CreateTaskPushNotificationConfig takes
 * const config = Effect.map(receiver.register({ taskId: "task-1" }), (r) => ({ url: r.url, token: Redacted.value(r.token) }))
 * ```
 * @category models
 * @since 0.1.0
 */
export interface Registration {
  /** A fresh id, for the config's `id`. */
  readonly id: string
  readonly url: string
  readonly token: Redacted.Redacted<string>
  /** The task given; otherwise the token belongs to the task of the first notification presenting it. */
  readonly taskId?: string | undefined
}

/**
 * @category models
 * @since 0.1.0
 */
export interface PushReceiver {
  /** The URL registrations name. */
  readonly url: string
  /** The webhook, for a router of the user's own: mount it at the path of `url`. */
  readonly app: HttpApp.Default
  /** A fresh token for one task, and the agent whose outcomes it carries (for their `agent` field). */
  readonly register: (options?: {
    readonly taskId?: string | undefined
    readonly agent?: string | undefined
  }) => Effect.Effect<Registration>
  /** Waits for the outcome pushed for `taskId`, without a deadline: see `RemoteAgent.awaitOutcome` for one. */
  readonly outcome: (taskId: string) => Effect.Effect<RemoteOutcome.RemoteOutcome>
  /** The outcome pushed for `taskId`, when one arrived. */
  readonly delivered: (taskId: string) => Effect.Effect<Option.Option<RemoteOutcome.RemoteOutcome>>
  /**
   * The events delivered from now on, of every task, for the scope (the
   * oldest dropped past `eventCapacity` unread).
   */
  readonly subscribe: Effect.Effect<Queue.Dequeue<RemoteEvent.RemoteEvent>, never, Scope.Scope>
}

/**
 * How {@link make} builds a receiver mounted in the user's router.
 *
 * @example
 * ```ts
 * import { PushReceiver } from "effect-a2a"
 *
 * const options: PushReceiver.Options = { url: "https://orders.example.com/a2a/push", maxTasks: 1000 }
 * ```
 * @category options
 * @since 0.1.0
 */
export interface Options {
  /** The public URL the webhook is reached at, given to the remote agents. */
  readonly url: string
  /** The name of the outcomes of registrations that give no agent, and of the log lines. Default `push`. */
  readonly name?: string | undefined
  /** How many tokens and tasks are remembered, the oldest forgotten first. Default 10 000. */
  readonly maxTasks?: number | undefined
  /** The largest body accepted. Default 1 MiB. */
  readonly maxBodyBytes?: number | undefined
  /** How many delivered events `events` holds for a slow reader. Default 1024. */
  readonly eventCapacity?: number | undefined
}

/**
 * How {@link layer} serves a receiver on a Node server of its own.
 *
 * @example
 * ```ts
 * import { PushReceiver } from "effect-a2a"
 *
 * const options: PushReceiver.ServeOptions = { host: "0.0.0.0", port: 8081, publicUrl: "https://orders.example.com/a2a/push" }
 * ```
 * @category options
 * @since 0.1.0
 */
export interface ServeOptions extends Omit<Options, "url"> {
  /** Default `127.0.0.1`. */
  readonly host?: string | undefined
  /** Default 0: any free port. */
  readonly port?: number | undefined
  /** Default `/a2a/push`. */
  readonly path?: string | undefined
  /** The URL registrations name; by default the bound address and `path`. */
  readonly publicUrl?: string | undefined
}

/**
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { PushReceiver } from "effect-a2a"
 *
 * const url = Effect.map(PushReceiver.PushReceiver, (receiver) => receiver.url)
 * ```
 * @category tags
 * @since 0.1.0
 */
export const PushReceiver: Context.Tag<PushReceiver, PushReceiver> = Context.GenericTag<PushReceiver>(
  "effect-a2a/PushReceiver"
)

/**
 * A receiver to mount in the user's own `@effect/platform` router.
 *
 * @example
 * ```ts
 * import { HttpRouter } from "@effect/platform"
 * import { Effect } from "effect"
 * import { PushReceiver } from "effect-a2a"
 *
 * const router = Effect.map(
 *   PushReceiver.make({ url: "https://orders.example.com/a2a/push" }),
 *   (receiver) => HttpRouter.empty.pipe(HttpRouter.post("/a2a/push", receiver.app))
 * )
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const make: (options: Options) => Effect.Effect<PushReceiver> = (options) =>
  Effect.flatMap(internalReceiver, (internal) => internal.make(options))

/**
 * A receiver on a Node server of its own, for the scope. Fails with a
 * `ServeError` when its address cannot be bound.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { PushReceiver } from "effect-a2a"
 *
 * const program = Effect.scoped(Effect.gen(function*() {
 *   const receiver = yield* PushReceiver.serve({ port: 0 })
 *   return receiver.url
 * }))
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const serve: (options?: ServeOptions) => Effect.Effect<PushReceiver, ServeError, Scope.Scope> = (options) =>
  Effect.flatMap(internalReceiver, (internal) => internal.serve(options ?? {}))

/**
 * A layer providing {@link PushReceiver}, served on its own Node server.
 *
 * @example
 * ```ts
 * import { PushReceiver } from "effect-a2a"
 *
 * const ReceiverLive = PushReceiver.layer({ host: "127.0.0.1", port: 0 })
 * ```
 * @category layers
 * @since 0.1.0
 */
export const layer = (options?: ServeOptions): Layer.Layer<PushReceiver, ServeError> =>
  Layer.scoped(PushReceiver, serve(options))
