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
import type { A2ARequestHandler, ServerCallContext } from "@a2a-js/sdk/server"
import { storedTextProblem } from "../../ledger/storedText.js"

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
  readonly visible?: ((taskId: string, context: ServerCallContext) => Promise<boolean>) | undefined
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

// A refused stream fails on its first event, so that the transports answer it as a plain error.
const refusedStream = (error: Error | Promise<Error>): AsyncGenerator<never, void, undefined> =>
  (async function*() {
    throw await error
  })()

// `stream`, with `release` called once it ends or is closed.
const releasingStream = <A>(stream: AsyncGenerator<A, void, undefined>, release: () => void) =>
  (async function*() {
    try {
      return yield* stream
    } finally {
      release()
    }
  })()

// What a call does with its hold on the task: a release to call once it settles, or its refusal.
type Held =
  | { readonly _tag: "Go"; readonly release?: () => void }
  | { readonly _tag: "Refused"; readonly error: Error | Promise<Error> }

/**
 * `handler`, refusing before it runs what `refusals` names. Each refusal is
 * answered as the handler answers its own errors.
 *
 * @internal
 */
export const refusing = (handler: A2ARequestHandler, refusals: Refusals): A2ARequestHandler => {
  const { checkIds, claim, visible } = refusals
  const idProblem = (params: unknown): Error | undefined => {
    const problem = checkIds === true ? unstorableId(params) : undefined
    return problem === undefined ? undefined : new RequestMalformedError(problem)
  }
  const hold = (params: SendMessageRequest, context: ServerCallContext): Held => {
    const malformed = idProblem(params)
    if (malformed !== undefined) return { _tag: "Refused", error: malformed }
    const taskId = claim === undefined ? undefined : continuedTask(params)
    if (taskId === undefined || claim === undefined) return { _tag: "Go" }
    const release = claim(taskId, params, context)
    if (release !== undefined) return { _tag: "Go", release }
    return {
      _tag: "Refused",
      error: visible === undefined ? stillRunning(taskId) : visible(taskId, context).then(
        (seen) => seen ? stillRunning(taskId) : new TaskNotFoundError(`Task not found: ${taskId}`)
      )
    }
  }
  // An operation on a stored id: refused when the store cannot hold the id.
  const checked =
    <P, A>(call: (params: P, context: ServerCallContext) => Promise<A>) =>
    (params: P, context: ServerCallContext): Promise<A> => {
      const malformed = idProblem(params)
      return malformed === undefined ? call(params, context) : Promise.reject(malformed)
    }
  return {
    getAgentCard: () => handler.getAgentCard(),
    getAuthenticatedExtendedAgentCard: (params, context) => handler.getAuthenticatedExtendedAgentCard(params, context),
    sendMessage: (params, context) => {
      const held = hold(params, context)
      if (held._tag === "Refused") return Promise.resolve(held.error).then((error) => Promise.reject(error))
      let result
      try {
        result = handler.sendMessage(params, context)
      } catch (error) {
        held.release?.()
        throw error
      }
      if (held.release !== undefined) result.then(held.release, held.release)
      return result
    },
    sendMessageStream: (params, context) => {
      const held = hold(params, context)
      if (held._tag === "Refused") return refusedStream(held.error)
      let result
      try {
        result = handler.sendMessageStream(params, context)
      } catch (error) {
        held.release?.()
        throw error
      }
      return held.release === undefined ? result : releasingStream(result, held.release)
    },
    getTask: checked((params, context) => handler.getTask(params, context)),
    listTasks: checked((params, context) => handler.listTasks(params, context)),
    cancelTask: checked((params, context) => handler.cancelTask(params, context)),
    resubscribe: (params, context) => {
      const malformed = idProblem(params)
      return malformed === undefined ? handler.resubscribe(params, context) : refusedStream(malformed)
    },
    createTaskPushNotificationConfig: (params, context) => handler.createTaskPushNotificationConfig(params, context),
    getTaskPushNotificationConfig: (params, context) => handler.getTaskPushNotificationConfig(params, context),
    listTaskPushNotificationConfigs: (params, context) => handler.listTaskPushNotificationConfigs(params, context),
    deleteTaskPushNotificationConfig: (params, context) => handler.deleteTaskPushNotificationConfig(params, context)
  }
}
