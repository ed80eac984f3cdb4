/**
 * A blocking send, and the polling of a task a call found unfinished (a
 * send's answer, or a stream that ended while its task still ran).
 *
 * @internal
 */
import type { Message, SendMessageConfiguration, Task } from "@a2a-js/sdk"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as FiberRef from "effect/FiberRef"
import * as Struct from "effect/Struct"
import * as A2AClientError from "../../../A2AClientError.js"
import type { RemoteAgent } from "../../../RemoteAgent.js"
import type * as RemoteOutcome from "../../../RemoteOutcome.js"
import type * as clientCall from "./call.js"
import { inputIds, invalidRequest, keyFor, messageOf, retryOfFailed } from "./input.js"
import * as outcomes from "./outcome.js"
import { abandoned, type AgentContext, cancelsOnInterrupt, makeAbandon, type ReadTask, view } from "./task.js"

/** How long the last poll before a call's deadline leaves for its answer. */
const pollAnswerMillis = 20

/**
 * Polls a task that a call found unfinished (a blocking send's answer, or a
 * stream that ended while its task still ran), until it ends or the call's
 * time is up (the exchange's cancel fires then).
 *
 * @internal
 */
export const awaitEnd = (agent: string, readTask: ReadTask) =>
(
  operation: "SendMessage" | "SendStreamingMessage" | "SubscribeToTask",
  exchange: clientCall.Exchange,
  running: RemoteOutcome.Running,
  done: clientCall.Done<RemoteOutcome.RemoteOutcome>
): void => {
  const ids = { taskId: running.taskId, contextId: running.contextId }
  const timedOut = () =>
    new A2AClientError.A2AClientError({
      agent,
      operation,
      reason: "Timeout",
      delivery: "Unknown",
      detail: `task ${running.taskId} did not end within ${Duration.format(exchange.timeout)}`,
      ...ids
    })
  let delay = 25
  let timer: ReturnType<typeof setTimeout> | undefined
  const onAbort = () => {
    clearTimeout(timer)
    done(Either.left(timedOut()))
  }
  exchange.cancel.onAbort(onAbort)
  const finish: clientCall.Done<RemoteOutcome.RemoteOutcome> = (result) => {
    exchange.cancel.onAbort(undefined)
    done(result)
  }
  const poll = () =>
    readTask(exchange, running.taskId, ids, (polled) =>
      Either.isRight(polled)
        ? next(polled.right)
        // The message was accepted: whatever a poll hits, the call's own delivery is not "NotSent",
        // and a refusal of the poll (429, 503 and its Retry-After) is not a refusal of the message.
        : finish(Either.left(
          new A2AClientError.A2AClientError({
            ...Struct.omit(polled.left, "status", "retryAfter"),
            operation,
            delivery: "Unknown",
            ...ids,
            detail: `task ${running.taskId} was accepted; polling it failed: ${polled.left.detail}`
          })
        )))
  const next = (current: RemoteOutcome.TaskView): void => {
    if (current._tag !== "Running") return finish(Either.right(current))
    const left = exchange.deadline - Date.now()
    if (left <= 0) return finish(Either.left(timedOut()))
    // The last poll leaves its answer time to come before the deadline; a poll due at the deadline (a
    // late timer) would only be aborted on its way. After the last one, the call's own timer ends it.
    const wait = Math.min(delay, left - pollAnswerMillis)
    if (wait <= 0) return
    timer = setTimeout(() => Date.now() >= exchange.deadline ? finish(Either.left(timedOut())) : poll(), wait)
    delay = Math.min(delay * 2, 1000)
  }
  next(running)
}

/** A poll of one agent's unfinished tasks. @internal */
export type AwaitEnd = ReturnType<typeof awaitEnd>

const isMessage = (result: Message | Task): result is Message => !("status" in result) && "messageId" in result

/** The blocking send of an agent, and its send answered at once. @internal */
export const make = (context: AgentContext, awaitEnd: AwaitEnd) => {
  const { agent, client, unsendable } = context
  const { operate, request } = context.engine
  const viewSent = view(agent, "SendMessage")
  const abandon = makeAbandon(context)
  /**
   * One SendMessage with `configuration`; `settle` gets the task's view the
   * answer holds (a bare message is an outcome) within the same exchange.
   */
  const sendRequest = <B extends RemoteOutcome.TaskView>(
    input: Parameters<RemoteAgent["send"]>[0],
    options: Parameters<RemoteAgent["send"]>[1],
    configuration: SendMessageConfiguration | undefined,
    settle: (
      exchange: clientCall.Exchange,
      result: Either.Either<RemoteOutcome.TaskView, A2AClientError.A2AClientError>,
      done: clientCall.Done<B>
    ) => void
  ) =>
    operate<B>("SendMessage", options, (exchange, done) => {
      const problem = unsendable(options, input)
      if (problem !== undefined) {
        return done(Either.left(invalidRequest(agent, "SendMessage", inputIds(input), problem)))
      }
      const message = messageOf(input, options)
      request(
        exchange,
        "SendMessage",
        { contextId: message.contextId, taskId: message.taskId },
        (o) => client.sendMessage({ tenant: "", message, configuration, metadata: undefined }, o),
        (result) => isMessage(result) ? Either.right(outcomes.messageOutcome(agent, result)) : viewSent(result),
        (result) => settle(exchange, result, done)
      )
    })
  /** `running` hears of the task an answer left unfinished, before it is polled. */
  const sendWith = (
    input: Parameters<RemoteAgent["send"]>[0],
    options: Parameters<RemoteAgent["send"]>[1],
    running?: (taskId: string) => void
  ) =>
    sendRequest<RemoteOutcome.RemoteOutcome>(input, options, undefined, (exchange, result, done) => {
      if (Either.isLeft(result) || result.right._tag !== "Running") {
        return done(result as Either.Either<RemoteOutcome.RemoteOutcome, A2AClientError.A2AClientError>)
      }
      running?.(result.right.taskId)
      awaitEnd("SendMessage", exchange, result.right, done)
    })
  /**
   * A send answered at once with the task, however far it has gone (A2A
   * `returnImmediately`), for a caller that waits for its outcome otherwise:
   * by push.
   */
  const sendForTask = (
    input: Parameters<RemoteAgent["send"]>[0],
    options: Parameters<RemoteAgent["send"]>[1],
    configuration: SendMessageConfiguration
  ) =>
    sendRequest<RemoteOutcome.TaskView>(
      input,
      options,
      { ...configuration, returnImmediately: true },
      (_, result, done) => done(result)
    )
  /**
   * A send that cancels its task when given up on. A poll that saw the task
   * end ends the send with it, so a task known and not seen ended is one
   * still running when the send was interrupted or ran out of time.
   */
  const sendCancelling = (input: Parameters<RemoteAgent["send"]>[0], options: Parameters<RemoteAgent["send"]>[1]) =>
    Effect.suspend(() => {
      let taskId: string | undefined
      return Effect.onExit(
        sendWith(input, options, (id) => (taskId = id)),
        (exit) => taskId !== undefined && abandoned(exit) ? abandon(taskId, options) : Effect.void
      )
    })
  // The default path stays as it was: the cancel's bookkeeping only for a call that asked for it.
  const sendOnce = (input: Parameters<RemoteAgent["send"]>[0], options: Parameters<RemoteAgent["send"]>[1]) =>
    cancelsOnInterrupt(context, options) ? sendCancelling(input, options) : sendWith(input, options)
  // Only a keyed send reads whether it retries a FAILED task: the rest go straight to the engine.
  const send: RemoteAgent["send"] = (input, options) =>
    options?.idempotencyKey === undefined
      ? sendOnce(input, options)
      : FiberRef.getWith(retryOfFailed, (failed) => sendOnce(input, keyFor(options, failed)))
  return { send, sendForTask }
}

/** A send answered at once with the task. @internal */
export type SendForTask = ReturnType<typeof make>["sendForTask"]
