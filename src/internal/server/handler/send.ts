/**
 * SendMessage and SendStreamingMessage: the checks the SDK's handler makes
 * before a run, the run on its task's channel, and what the caller reads of
 * it: the answer once the run stops (or at once, `returnImmediately`; or at
 * AUTH_REQUIRED), or each event as the store has it.
 *
 * @internal
 */
import { type Message, type SendMessageRequest, type StreamResponse, type Task, TaskState } from "@a2a-js/sdk"
import {
  A2AError,
  ExtensionSupportRequiredError,
  RequestMalformedError,
  UnsupportedOperationError
} from "@a2a-js/sdk/errors"
import { AgentEvent, type AgentExecutionEvent, RequestContext, type ServerCallContext } from "@a2a-js/sdk/server"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Fiber from "effect/Fiber"
import * as Stream from "effect/Stream"
import { randomUUID } from "node:crypto"
import * as wireParts from "../../wire/parts.js"
import * as taskState from "../../wire/taskState.js"
import * as internalDurable from "../durable/durableRun.js"
import type * as internalChannel from "./channel.js"
import {
  type Core,
  errorText,
  type Failure,
  type RequestHandler,
  requireTaskId,
  stopsAt,
  streamResponseOf,
  withHistoryLength
} from "./core.js"
import * as internalRunStages from "./runStages.js"

type Pattern = "undetermined" | "message" | "task"

/** The next shape of a stream after `event`: a message alone, or a task followed by its updates. */
const advance = (event: AgentExecutionEvent, pattern: Pattern): Pattern | UnsupportedOperationError => {
  switch (pattern) {
    case "undetermined":
      return event.kind === "message"
        ? "message"
        : event.kind === "task"
        ? "task"
        : new UnsupportedOperationError(`Received ${event.kind} before initial 'Message'/'Task' event.`)
    case "message":
      return new UnsupportedOperationError(`Received ${event.kind} after message-only response.`)
    case "task":
      return event.kind === "statusUpdate" || event.kind === "artifactUpdate"
        ? pattern
        : new UnsupportedOperationError(`Stream ordering violation: received ${event.kind} in task lifecycle stream.`)
  }
}

/** What a caller reads of an event: a task event as the store holds the task. */
const responseOf = (event: AgentExecutionEvent, task: Task | undefined, historyLength: number | undefined) =>
  event.kind === "task"
    ? ({ payload: { $case: "task", value: withHistoryLength(task ?? event.data, historyLength) } } as StreamResponse)
    : streamResponseOf(event)

/**
 * A SendMessage waiting for its answer, as it follows its run: its state in
 * fields, not closures, since a send mostly waits and what it holds is held
 * once per send in flight. A blocking send is answered once its run stops
 * (or at AUTH_REQUIRED), a non-blocking one at its first event.
 */
class Answering implements internalChannel.Follower {
  private current: Task | undefined
  private reply: Message | undefined
  private answered = false
  // Whether the fiber holds `unfollow` as an observer: not while the run starts, which may answer at once.
  private observed = false
  private unfollow: () => void = () => {}

  constructor(
    private readonly fiber: Fiber.RuntimeFiber<Message | Task, Failure>,
    private readonly resume: (answer: Effect.Effect<Message | Task, Failure>) => void,
    private readonly blocking: boolean,
    private readonly historyLength: number | undefined
  ) {}

  /** This follower, told what stops following. */
  following(unfollow: () => void): this {
    this.unfollow = unfollow
    return this
  }

  /** Not answered yet: an interruption of the call's fiber stops following once the fiber ends. */
  observe(unfollow: () => void): void {
    if (this.answered) return
    this.observed = true
    this.fiber.addObserver(unfollow)
  }

  event(event: AgentExecutionEvent, task: Task | undefined): void {
    if (event.kind === "message") this.reply = event.data
    else if (task !== undefined) this.current = task
    if (!this.blocking) {
      if (event.kind === "message") this.answer(event.data)
      else if (this.current !== undefined) this.answer(this.current)
    } else if (
      event.kind === "statusUpdate" && event.data.status?.state === TaskState.TASK_STATE_AUTH_REQUIRED &&
      this.current !== undefined
    ) {
      // Answered now: the credentials come out of band, and the run goes on in the store.
      this.answer(this.current)
    }
    if (stopsAt(event)) this.finished()
  }

  failed(error: unknown): void {
    this.unfollow()
    this.settle(Effect.fail(error instanceof A2AError || error instanceof Error ? error : new Error(errorText(error))))
  }

  finished(): void {
    this.unfollow()
    if (!this.blocking) {
      return this.settle(
        Effect.fail(new RequestMalformedError("Execution finished before a message or task was produced."))
      )
    }
    const result = this.reply ?? this.current
    if (result === undefined) {
      return this.settle(
        Effect.fail(new A2AError("Agent execution finished without a result, and no task context found."))
      )
    }
    this.answer(result)
  }

  private answer(result: Message | Task): void {
    this.settle(Effect.succeed("status" in result ? withHistoryLength(result, this.historyLength) : result))
  }

  private settle(answer: Effect.Effect<Message | Task, Failure>): void {
    if (this.answered) return
    this.answered = true
    if (this.observed) this.fiber.removeObserver(this.unfollow)
    this.resume(answer)
  }
}

/**
 * The SDK's `RequestContext` of a request, without the `structuredClone` of
 * the whole request its constructor makes per call: the request is the
 * call's own, decoded for it alone, and its message a copy already.
 */
const requestContextFor = (
  request: SendMessageRequest,
  taskId: string,
  contextId: string,
  context: ServerCallContext,
  task: Task | undefined,
  referenceTasks: Array<Task> | undefined
): RequestContext =>
  Object.assign(Object.create(RequestContext.prototype) as RequestContext, {
    request,
    taskId,
    contextId,
    context,
    task,
    referenceTasks
  })

/** Starts again a durable run whose process died (see `edge/resumes.ts`). @internal */
export interface Resuming {
  /**
   * Runs `request` again on the task `task`, its run's first request, with
   * no caller following it; `done(true)` once it ends, `done(false)` when
   * it could not start, or once it ends when some of its events could not
   * be stored. Never while it runs: its claim is held until then.
   */
  readonly resume: (
    task: Task,
    request: SendMessageRequest,
    context: ServerCallContext,
    done: (ended: boolean) => void
  ) => void
}

/** @internal */
export const makeSend = (core: Core): Pick<RequestHandler, "sendMessage" | "sendMessageStream"> & Resuming => {
  const { found, internal, load, openChannel, options, pushStore, runFork, store } = core
  const { card, executor } = options
  const runStages = options.runStages ?? []

  const requestContextOf = (params: SendMessageRequest, context: ServerCallContext) =>
    Effect.gen(function*() {
      // Checked by the caller: a send without a message is refused before.
      const message = params.message as Message
      const extensions = card.capabilities?.extensions ?? []
      const requested = new Set(context.requestedExtensions ?? [])
      const missing = extensions.filter((extension) => extension.required && !requested.has(extension.uri))
      if (missing.length > 0) {
        return yield* Effect.fail(
          new ExtensionSupportRequiredError(
            `Client must declare support for required extensions: ${
              missing.map((extension) => extension.uri).join(", ")
            }`
          )
        )
      }
      let task: Task | undefined
      if (message.taskId) {
        const stored = yield* Effect.flatMap(requireTaskId(message.taskId), (taskId) => found(taskId, context))
        const state = stored.status?.state
        if (taskState.isTerminal(state)) {
          return yield* Effect.fail(
            new UnsupportedOperationError(
              `Task ${stored.id} is in a terminal state (${state}) and cannot be modified.`
            )
          )
        }
        if (message.contextId && stored.contextId && message.contextId !== stored.contextId) {
          return yield* Effect.fail(
            new RequestMalformedError(
              `contextId mismatch: message contextId '${message.contextId}' does not match task '${stored.id}' contextId '${stored.contextId}'`
            )
          )
        }
        // The caller's message joins the task's history before its run sees the task.
        task = yield* Effect.catchAll(
          store.append(stored.id, [AgentEvent.message(message)], context),
          internal("save", stored.id)
        )
      }
      const taskId = message.taskId || options.taskIdFor?.(context) || randomUUID()
      let referenceTasks: Array<Task> | undefined
      if (message.referenceTaskIds.length > 0) {
        referenceTasks = []
        for (const referenceId of message.referenceTaskIds) {
          const reference = yield* load(referenceId, context)
          if (reference !== undefined) referenceTasks.push(reference)
        }
      }
      const contextId = message.contextId || task?.contextId || randomUUID()
      if (context.requestedExtensions) {
        const exposed = new Set(extensions.map((extension) => extension.uri))
        context.setRequestedExtensions(context.requestedExtensions.filter((uri) => exposed.has(uri)))
      }
      const requestContext = requestContextFor(
        { ...params, message: { ...message, contextId, taskId } },
        taskId,
        contextId,
        context,
        task,
        referenceTasks
      )
      const pushConfig = params.configuration?.taskPushNotificationConfig
      if (pushConfig !== undefined && pushStore !== undefined) {
        const config = structuredClone(pushConfig)
        config.taskId = taskId
        yield* Effect.promise(() => pushStore.save(taskId, context, config))
      }
      // Told once nothing before the run can fail any more: a call refused before it did not start one.
      options.onRequestContext?.(requestContext)
      return requestContext
    })

  /**
   * Starts the run of `requestContext` on its task's channel, the follower
   * `follow` makes following it from its first event, which may come
   * before `execute` returns; it is given what stops following, which it
   * returns too. The run's stages start first: one that fails refuses the
   * run, and its follower fails with that. A run that throws ends its task
   * FAILED, as the SDK's handler ends it. The stages end once the run's
   * last event is in the store, before the channel ends; the channel takes
   * no more runs meanwhile.
   */
  const run = (
    requestContext: RequestContext,
    follow: (unfollow: () => void, launched: () => boolean) => internalChannel.Follower
  ): () => void => {
    const { context, contextId, taskId, userMessage } = requestContext
    const { channel, opened } = openChannel(taskId, context, userMessage)
    let stopped = false
    // Set once followed: the follower may stop before that.
    const following: { off?: () => void } = {}
    const unfollow = () => {
      stopped = true
      following.off?.()
    }
    let launched = false
    const follower = follow(unfollow, () => launched)
    following.off = channel.follow({
      event: (event, task) => stopped ? undefined : follower.event(event, task),
      failed: (error) => stopped ? undefined : follower.failed(error),
      finished: () => stopped ? undefined : follower.finished()
    })
    const launch = (started: internalRunStages.Started) => {
      launched = true
      const untap = started.event === undefined ? undefined : channel.tap(started.event)
      let ran: Promise<void>
      try {
        ran = executor.execute(requestContext, channel)
      } catch (error) {
        ran = Promise.reject(error)
      }
      const ended = ran.catch((error: unknown) => {
        const failure = wireParts.agentMessage(taskId, contextId, [
          wireParts.textPart(`Agent execution error: ${errorText(error)}`)
        ])
        const status = { state: TaskState.TASK_STATE_FAILED, message: failure, timestamp: new Date().toISOString() }
        if (!channel.taskPublished) {
          const history = [...(requestContext.task?.history ?? [])]
          if (!history.some((known) => known.messageId === userMessage.messageId)) history.push(userMessage)
          channel.publish(AgentEvent.task({ id: taskId, contextId, status, artifacts: [], history, metadata: {} }))
        }
        channel.publish(AgentEvent.statusUpdate({ taskId, contextId, status, metadata: {} }))
      })
      const end = started.end
      // With nothing to end, the channel ends as it is: what is still being appended reaches the taps first.
      if (end === undefined) {
        void ended.finally(() => channel.finished())
        return
      }
      void ended.then(() => channel.appended()).finally(() => {
        // A message that comes while the stages end (a claim let go in the database, say) starts a run of its own:
        // on this channel, which ends with them, its events would be lost.
        channel.ran()
        untap?.()
        runFork(unseen(Effect.ensuring(end, Effect.sync(() => channel.finished()))))
      })
    }
    const now = internalRunStages.startNow(runStages, { requestContext, bus: channel })
    if (now !== undefined) {
      launch(now)
    } else {
      runFork(unseen(
        Effect.flatMap(
          Effect.exit(internalRunStages.start(runStages, { requestContext, bus: channel })),
          (exit) =>
            Effect.sync(() => {
              if (Exit.isSuccess(exit)) {
                return launch(exit.value)
              }
              if (!stopped) follower.failed(Cause.squash(exit.cause))
              // A channel of its own, with no run: it goes, or the next message would join it.
              if (opened) channel.finished()
            })
        )
      ))
    }
    return unfollow
  }

  // A fiber no one awaits: what goes wrong in it (a listener that throws as the channel ends) is logged, not lost.
  const unseen = (effect: Effect.Effect<void>) =>
    Effect.catchAllCause(effect, (cause) => Effect.logWarning("A run's start or end went wrong", cause))

  const checkedMessage = (params: SendMessageRequest, streaming: boolean) =>
    params.message?.messageId
      ? Effect.void
      : Effect.fail(
        new RequestMalformedError(`message.messageId is required${streaming ? " for streaming" : ""}.`)
      )

  const sendMessage: RequestHandler["sendMessage"] = (params, context) =>
    Effect.zipRight(
      checkedMessage(params, false),
      Effect.flatMap(requestContextOf(params, context), (requestContext) => {
        const historyLength = params.configuration?.historyLength
        const blocking = params.configuration?.returnImmediately !== true
        // The call's fiber waits for the answer with nothing on its stack: a canceler would keep a frame
        // (`onInterrupt`) and its closures for the whole run. Interrupted, the fiber stops following as it ends.
        return Effect.withFiberRuntime<Message | Task, Failure>((fiber) =>
          Effect.async((resume) => {
            const answering = new Answering(fiber, resume, blocking, historyLength)
            const unfollow = run(requestContext, (unfollow) => answering.following(unfollow))
            answering.observe(unfollow)
          })
        )
      })
    )

  const sendMessageStream: RequestHandler["sendMessageStream"] = (params, context) =>
    Stream.unwrap(
      Effect.gen(function*() {
        if (!card.capabilities?.streaming) {
          return yield* Effect.fail(new UnsupportedOperationError("Streaming is not supported."))
        }
        yield* checkedMessage(params, true)
        const requestContext = yield* requestContextOf(params, context)
        const historyLength = params.configuration?.historyLength
        return Stream.async<StreamResponse, Failure>((emit) => {
          let pattern: Pattern = "undetermined"
          const unfollow = run(requestContext, (unfollow) => ({
            event: (event, task) => {
              const next = advance(event, pattern)
              if (next instanceof UnsupportedOperationError) {
                unfollow()
                return void emit.fail(next)
              }
              pattern = next
              void emit.single(responseOf(event, task, historyLength))
              if (stopsAt(event)) {
                unfollow()
                void emit.end()
              }
            },
            failed: (error) => {
              unfollow()
              void emit.fail(error instanceof Error ? error : new Error(errorText(error)))
            },
            finished: () => void emit.end()
          }))
          return Effect.sync(unfollow)
        }, "unbounded")
      })
    )

  const resume: Resuming["resume"] = (task, request, context, done) => {
    const requestContext = requestContextFor(request, task.id, task.contextId, context, task, undefined)
    // Told once. A refused append of a run that started is told at its end: the run goes on meanwhile (the append
    // is tried again), and its claim, let lapse now, would have another sweep resume it a second time at once.
    let told = false
    let refused = false
    const tell = (ended: boolean) => {
      if (told) return
      told = true
      done(ended)
    }
    run(internalDurable.resuming(requestContext), (_, launched) => ({
      event: () => {},
      failed: (error) => {
        if (launched()) refused = true
        else tell(false)
        runFork(
          Effect.logWarning(
            launched() ? "A resumed durable run's events could not be stored" : "A durable run could not start again"
          ).pipe(Effect.annotateLogs({ taskId: task.id, cause: errorText(error) }))
        )
      },
      finished: () => tell(!refused)
    }))
  }

  return { sendMessage, sendMessageStream, resume }
}
