/**
 * Calls whose task's outcome comes by push: the config a send registers
 * with its receiver, and the wait for a pushed outcome with its fallback to
 * `GetTask` polling.
 *
 * @internal
 */
import type { AgentCard, SendMessageConfiguration } from "@a2a-js/sdk"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"
import type * as A2AClientError from "../../../A2AClientError.js"
import type * as PushReceiver from "../../../PushReceiver.js"
import type { AwaitOptions, CallOptions, RemoteAgent } from "../../../RemoteAgent.js"
import type * as RemoteOutcome from "../../../RemoteOutcome.js"
import * as clientCall from "../call/call.js"
import { inputIds, invalidRequest } from "../call/input.js"
import type { SendForTask } from "../call/send.js"
import type { StreamWith } from "../call/stream.js"
import { abandoned, type AgentContext, cancelsOnInterrupt, makeAbandon } from "../call/task.js"

const defaultPollEvery = Duration.seconds(1)

/** The configuration of a send whose task pushes to `registration`, its token in the SDK's token field. */
const configurationOf = (registration: PushReceiver.Registration): SendMessageConfiguration => ({
  acceptedOutputModes: [],
  taskPushNotificationConfig: {
    tenant: "",
    id: registration.id,
    taskId: "",
    url: registration.url,
    token: Redacted.value(registration.token),
    authentication: undefined
  },
  returnImmediately: false
})

const noPush =
  "the agent's card does not declare push notifications (capabilities.pushNotifications), so no push config was sent"

/** The calls of one agent that take a push receiver. @internal */
export const make = (
  context: AgentContext,
  card: AgentCard,
  sendForTask: SendForTask,
  streamWith: StreamWith
) => {
  const { agent } = context
  const { operate, reportStream } = context.engine
  const pushes = card.capabilities?.pushNotifications === true
  const abandon = makeAbandon(context)
  const refuse = <A extends RemoteOutcome.TaskView>(
    operation: A2AClientError.Operation,
    ids: clientCall.Ids,
    options: CallOptions | undefined
  ) => operate<A>(operation, options, (_, done) => done(Either.left(invalidRequest(agent, operation, ids, noPush))))

  /**
   * The outcome of `taskId` by push, within `timeout`; then by polling
   * `GetTask` every `pollEvery`, within `timeout` again. A push that comes
   * while polling still wins. A pushed outcome counts as the call's would.
   */
  const awaitWith = (
    operation: A2AClientError.Operation,
    getTask: RemoteAgent["getTask"],
    taskId: string,
    options: AwaitOptions
  ): Effect.Effect<RemoteOutcome.RemoteOutcome, A2AClientError.A2AClientError> => {
    const timeout = Duration.decode(options.timeout ?? context.timeout)
    const pollEvery = Duration.decode(options.pollEvery ?? defaultPollEvery)
    const pushed = options.receiver.outcome(taskId).pipe(
      Effect.tap((outcome) =>
        reportStream(operation, Either.right(outcome)).pipe(Effect.annotateLogs({ channel: "push" }))
      )
    )
    const poll: Effect.Effect<RemoteOutcome.RemoteOutcome, A2AClientError.A2AClientError> = getTask(taskId, {
      headers: options.headers
    }).pipe(
      Effect.flatMap((task) =>
        task._tag === "Running" ? Effect.delay(Effect.suspend(() => poll), pollEvery) : Effect.succeed(task)
      )
    )
    const polled = poll.pipe(
      Effect.timeoutFail({
        duration: timeout,
        onTimeout: () =>
          clientCall.callError(
            agent,
            operation,
            "Timeout",
            "Unknown",
            `task ${taskId} did not end: no outcome pushed within ${Duration.format(timeout)}, nor polled within ${
              Duration.format(timeout)
            } after`,
            { taskId }
          )
      }),
      Effect.delay(timeout),
      Effect.tap(() => Effect.logDebug(`remote agent ${agent}: no outcome of task ${taskId} pushed in time; polled it`))
    )
    return Effect.raceFirst(pushed, polled).pipe(
      Effect.annotateLogs({ agent, taskId }),
      Effect.withSpan("RemoteAgent.awaitOutcome", {
        attributes: { "a2a.agent": agent, "a2a.task_id": taskId },
        kind: "client"
      })
    )
  }

  /** A send whose task pushes to the receiver; a task the answer leaves running is waited for by push. */
  const send = (getTask: RemoteAgent["getTask"]) =>
  (
    input: Parameters<RemoteAgent["send"]>[0],
    options: CallOptions & { readonly push: PushReceiver.PushReceiver }
  ): Effect.Effect<RemoteOutcome.RemoteOutcome, A2AClientError.A2AClientError> =>
    !pushes
      ? refuse("SendMessage", inputIds(input), options)
      : Effect.gen(function*() {
        const registration = yield* options.push.register({ agent })
        const task = yield* sendForTask(input, options, configurationOf(registration))
        if (task._tag !== "Running") return task
        const awaited = awaitWith("SendMessage", getTask, task.taskId, {
          receiver: options.push,
          timeout: options.timeout,
          headers: options.headers
        })
        // As a blocking send's poll does: a task known and not seen ended is cancelled when the call is given up on.
        return yield* cancelsOnInterrupt(context, options)
          ? Effect.onExit(awaited, (exit) => abandoned(exit) ? abandon(task.taskId, options) : Effect.void)
          : awaited
      })

  /** A streaming send whose task also pushes to the receiver. */
  const stream = (
    input: Parameters<RemoteAgent["stream"]>[0],
    options: CallOptions & { readonly push: PushReceiver.PushReceiver }
  ) =>
    !pushes
      ? Stream.drain(Stream.fromEffect(refuse("SendStreamingMessage", inputIds(input), options)))
      : Stream.unwrap(
        Effect.map(options.push.register({ agent }), (registration) =>
          streamWith(input, options, configurationOf(registration)))
      )

  return {
    send,
    stream,
    awaitOutcome: (getTask: RemoteAgent["getTask"]): RemoteAgent["awaitOutcome"] => (taskId, options) =>
      awaitWith("GetTask", getTask, taskId, options)
  }
}
