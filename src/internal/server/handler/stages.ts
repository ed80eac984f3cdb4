/**
 * The refusals every transport holds to, as a stage of the request handler
 * composed once by the server (`edge/app.ts`): before a run, a call whose
 * ids the task store cannot hold (`checkIds`), and a message to a task whose
 * run is in progress (`claim`). The JSON-RPC, HTTP+JSON and gRPC transports
 * all call the handler this stage returns, so none needs another's.
 *
 * @internal
 */
import type { SendMessageRequest } from "@a2a-js/sdk"
import { RequestMalformedError, TaskNotFoundError, UnsupportedOperationError } from "@a2a-js/sdk/errors"
import type { ServerCallContext } from "@a2a-js/sdk/server"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import { storedTextProblem } from "../../ledger/storedText.js"
import type { Failure, RequestHandler } from "./core.js"

/**
 * Holds the task a message continues for the request's length: a release,
 * or undefined when a run of the task is in progress (see
 * `EffectAgentExecutor.claim`).
 *
 * @internal
 */
export type Claim = (taskId: string, params: SendMessageRequest, context: ServerCallContext) => (() => void) | undefined

/** @internal */
export interface Refusals {
  /** Refuse (-32602) a call whose ids the task store cannot hold, before the handler sees it. */
  readonly checkIds?: boolean
  /** Refuse (-32004) a message to a task that is still running, before the handler sees it. */
  readonly claim?: Claim | undefined
  /**
   * Whether the caller of `context` may see the task: a message to another
   * caller's running task is answered TaskNotFound, as the handler answers
   * one to a task it does not find, not -32004, which would tell it exists.
   */
  readonly visible?: ((taskId: string, context: ServerCallContext) => Effect.Effect<boolean, Failure>) | undefined
}

/**
 * The refusal (-32004) of a message to a task whose run is in progress.
 *
 * @internal
 */
export const stillRunning = (taskId: string): UnsupportedOperationError =>
  new UnsupportedOperationError(
    `Task ${taskId} is still running; a message can continue it once it pauses for input or authentication.`
  )

/**
 * The longest ids the SDK's database task table holds (`varchar(36)` and
 * `varchar(255)` columns).
 */
const storedIdLimits = { id: 36, taskId: 36, contextId: 36, referenceTaskIds: 36, tenant: 255 } as const

const characters = (text: string): number => (text.length <= 36 ? text.length : [...text].length)

/**
 * Why a request's ids cannot be stored, or undefined: checked before
 * anything runs, since a run whose task cannot be saved would have its
 * side effects and no task.
 */
const unstorableId = (params: unknown): string | undefined => {
  if (typeof params !== "object" || params === null) return undefined
  const { message } = params as { readonly message?: unknown }
  const fields: Array<[string, unknown]> = [
    ["id", (params as { readonly id?: unknown }).id],
    ["tenant", (params as { readonly tenant?: unknown }).tenant],
    ["contextId", (params as { readonly contextId?: unknown }).contextId]
  ]
  if (typeof message === "object" && message !== null) {
    fields.push(["taskId", (message as { readonly taskId?: unknown }).taskId])
    fields.push(["contextId", (message as { readonly contextId?: unknown }).contextId])
    const references = (message as { readonly referenceTaskIds?: unknown }).referenceTaskIds
    if (Array.isArray(references)) { for (const reference of references) fields.push(["referenceTaskIds", reference]) }
  }
  for (const [name, value] of fields) {
    if (typeof value !== "string") continue
    const limit = storedIdLimits[name as keyof typeof storedIdLimits]
    const problem = storedTextProblem(value)
    if (problem !== undefined) return `${name} ${problem}`
    if (characters(value) > limit) return `${name} must be at most ${limit} characters for this server's task store`
  }
  return undefined
}

const continuedTask = (params: SendMessageRequest): string | undefined => {
  const taskId: unknown = params?.message?.taskId
  return typeof taskId === "string" && taskId !== "" ? taskId : undefined
}

// What a message holds of the task it continues: a release to call once the call ends, or that a run holds it.
type Held =
  | { readonly _tag: "Go"; readonly release?: () => void }
  | { readonly _tag: "Running"; readonly taskId: string }

/**
 * `handler`, refusing before it runs what `refusals` names. Each refusal is
 * answered as the handler answers its own errors; a refused stream fails
 * before its first event, so that the transports answer it as a plain error.
 *
 * @internal
 */
export const refusing = (handler: RequestHandler, refusals: Refusals): RequestHandler => {
  const { checkIds, claim, visible } = refusals
  const idsChecked = (params: unknown): Effect.Effect<void, Failure> =>
    Effect.suspend(() => {
      const problem = checkIds === true ? unstorableId(params) : undefined
      return problem === undefined ? Effect.void : Effect.fail(new RequestMalformedError(problem))
    })
  const refusedContinuing = (taskId: string, context: ServerCallContext): Effect.Effect<never, Failure> =>
    visible === undefined ? Effect.fail(stillRunning(taskId)) : Effect.flatMap(
      visible(taskId, context),
      (seen) => Effect.fail(seen ? stillRunning(taskId) : new TaskNotFoundError(`Task not found: ${taskId}`))
    )
  // The call's hold on the task its message continues: what lets go of it, if anything; or that a run holds the task.
  const claimed = (params: SendMessageRequest, context: ServerCallContext): Effect.Effect<Held, Failure> =>
    Effect.zipRight(
      idsChecked(params),
      Effect.sync((): Held => {
        const taskId = claim === undefined ? undefined : continuedTask(params)
        if (taskId === undefined || claim === undefined) return { _tag: "Go" }
        const release = claim(taskId, params, context)
        return release === undefined ? { _tag: "Running", taskId } : { _tag: "Go", release }
      })
    )
  // Taken uninterruptibly and let go once, however the call ends: released as it settles, fails or is interrupted.
  const letGo = (held: Held) =>
    Effect.sync(() => {
      if (held._tag === "Go") held.release?.()
    })
  return {
    ...handler,
    // No scope of its own: one per call would be kept for each send in flight. A message that starts a task holds
    // nothing, and goes to the handler without the acquire and release around it (most sends, per call).
    sendMessage: (params, context) =>
      claim === undefined || continuedTask(params) === undefined
        ? Effect.flatMap(idsChecked(params), () => handler.sendMessage(params, context))
        : Effect.acquireUseRelease(
          claimed(params, context),
          (held) =>
            held._tag === "Running" ? refusedContinuing(held.taskId, context) : handler.sendMessage(params, context),
          letGo
        ),
    // Held until the stream ends, its reader leaves or it fails. The stages after this one are called at once, as
    // the call comes (`subscription.bounding` notes its reader then), whether or not it is refused.
    sendMessageStream: (params, context) => {
      const stream = handler.sendMessageStream(params, context)
      return Stream.unwrapScoped(
        Effect.flatMap(
          Effect.acquireRelease(claimed(params, context), letGo),
          (held) => held._tag === "Running" ? refusedContinuing(held.taskId, context) : Effect.succeed(stream)
        )
      )
    },
    getTask: (params, context) => Effect.zipRight(idsChecked(params), handler.getTask(params, context)),
    listTasks: (params, context) => Effect.zipRight(idsChecked(params), handler.listTasks(params, context)),
    cancelTask: (params, context) => Effect.zipRight(idsChecked(params), handler.cancelTask(params, context)),
    resubscribe: (params, context) => Stream.unwrap(Effect.as(idsChecked(params), handler.resubscribe(params, context)))
  }
}

/**
 * `handler`, each TaskNotFound it answers handed to `onMiss` with the task
 * the call named: the ownership stage, which tells a miss on another
 * caller's task (see `caller/authentication.ts` `missWatch`) apart from a
 * task that does not exist, for the count only, never for the answer.
 *
 * @internal
 */
export const noticingMisses = (
  handler: RequestHandler,
  onMiss: (taskId: string, context: ServerCallContext) => void
): RequestHandler => {
  const noticed = (taskId: string | undefined, context: ServerCallContext) => (error: Failure) =>
    Effect.sync(() => {
      if (error instanceof TaskNotFoundError && typeof taskId === "string" && taskId !== "") onMiss(taskId, context)
    })
  return {
    ...handler,
    sendMessage: (params, context) =>
      Effect.tapError(handler.sendMessage(params, context), noticed(params.message?.taskId, context)),
    sendMessageStream: (params, context) =>
      Stream.tapError(handler.sendMessageStream(params, context), noticed(params.message?.taskId, context)),
    getTask: (params, context) => Effect.tapError(handler.getTask(params, context), noticed(params.id, context)),
    cancelTask: (params, context) => Effect.tapError(handler.cancelTask(params, context), noticed(params.id, context)),
    resubscribe: (params, context) =>
      Stream.tapError(handler.resubscribe(params, context), noticed(params.id, context)),
    createPushConfig: (params, context) =>
      Effect.tapError(handler.createPushConfig(params, context), noticed(params.taskId, context)),
    getPushConfig: (params, context) =>
      Effect.tapError(handler.getPushConfig(params, context), noticed(params.taskId, context)),
    listPushConfigs: (params, context) =>
      Effect.tapError(handler.listPushConfigs(params, context), noticed(params.taskId, context)),
    deletePushConfig: (params, context) =>
      Effect.tapError(handler.deletePushConfig(params, context), noticed(params.taskId, context))
  }
}
