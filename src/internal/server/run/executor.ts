/**
 * The `@a2a-js/sdk` executor that runs an Effect agent: one fiber per run,
 * started with its span, progress and log annotations in place, settling
 * the run's final status (see `finalStatus.ts`). It saves nothing itself:
 * the request handler saves what a run publishes (ours appends it, see
 * `handler/channel.ts`). Plain promises around the fibers, as the SDK calls
 * it for every request.
 *
 * @internal
 */
import { type Task, TaskState, type TaskStatusUpdateEvent } from "@a2a-js/sdk"
import { AgentEvent, type ExecutionEventBus, type RequestContext } from "@a2a-js/sdk/server"
import * as Cause from "effect/Cause"
import type * as ConfigError from "effect/ConfigError"
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as FiberId from "effect/FiberId"
import * as FiberRef from "effect/FiberRef"
import * as FiberRefs from "effect/FiberRefs"
import * as HashMap from "effect/HashMap"
import * as HashSet from "effect/HashSet"
import * as Option from "effect/Option"
import * as Runtime from "effect/Runtime"
import type * as Scope from "effect/Scope"
import * as Tracer from "effect/Tracer"
import type * as AgentExecutor from "../../../AgentExecutor.js"
import { withoutStackTrace } from "../../errors.js"
import * as internalCauses from "../../observability/causes.js"
import { ConfigurationError } from "../../serverErrors.js"
import * as ErrorId from "../../wire/errorId.js"
import { fromTask, fromUserMessage } from "../../wire/parts.js"
import * as taskState from "../../wire/taskState.js"
import * as internalAuthentication from "../caller/authentication.js"
import { headersOf } from "../caller/headers.js"
import * as internalDurable from "../durable/durableRun.js"
import {
  type CancelWatch,
  cancelWatch,
  cancelWatchOption,
  type CancelWatchOptions,
  type RunFork,
  type WatchedRun
} from "./cancelWatch.js"
import { makeClaim } from "./claim.js"
import * as internalDurableExecution from "./durableExecution.js"
import * as internalFailure from "./failure.js"
import {
  admissionRefused,
  failureLogMessage,
  type Finals,
  isReply,
  makeFinals,
  ofResult,
  outputProblem,
  type RunEnd
} from "./finalStatus.js"
import { AgentProgress, DurableEvents, InvalidOutput, publishStatusUpdate, RunEvents, textStatus } from "./runEvents.js"
import { finishRun, makeTelemetry, runSpan, type Telemetry } from "./telemetry.js"

type AgentRequest = AgentExecutor.AgentRequest
type FinalStatus = AgentExecutor.FinalStatus

export { ConfigurationError }

/** Why a run that did not stop at a shutdown ended FAILED: its fiber could not be interrupted in time. */
class ShutdownTimeout extends Data.TaggedError("ShutdownTimeout")<{ readonly message: string }> {}

const shutdownFiberId = FiberId.make(-1, 0)

// What a run returns when its final status went out without anything left to
// wait for: one settled promise, so that `execute` knows it by identity.
const publishedNow: Promise<void> = Promise.resolve()

/** What the runs of one executor share, built once by {@link make}. */
interface Shared<R> extends Telemetry {
  readonly agent: AgentExecutor.Agent<unknown, R>
  readonly options: AgentExecutor.Options<R>
  readonly runtime: Runtime.Runtime<R>
  readonly logAnnotations: HashMap.HashMap<string, unknown>
  readonly runFork: RunFork
  readonly finals: Finals<R>
  /**
   * Whether a run's fiber settles its final status itself: only with an
   * `afterExecute` hook, which a cancel or a shutdown must interrupt. Without
   * one the fiber runs the agent alone, and its ending is settled as it ends.
   */
  readonly settlesInFiber: boolean
  /** A durable agent's: the store of its runs. */
  readonly durable: internalDurable.DurableWiring | undefined
  /** With a store others write: the watch for cancels from other servers, set once the executor is made. */
  cancels: CancelWatch | undefined
  readonly runs: Map<string, Set<Run<R>>>
  // The context id of a paused task, by the bus a handler may keep open for it: gone with the bus.
  readonly pausedContexts: WeakMap<ExecutionEventBus, string>
  readonly executions: Set<Promise<void>>
  /** The buses whose final events are being appended to the store (see `handler/channel.ts`). */
  readonly appending: Set<Appending>
  readonly state: { closing: boolean }
}

/**
 * A bus that appends its events to the task store itself (the server's
 * request handler's): a run ends once its final event is appended, and a
 * shutdown stops what it still retries at its deadline.
 */
interface Appending {
  readonly appended: () => Promise<void>
  readonly stopAppending: () => void
}

const appendingOf = (bus: ExecutionEventBus): Appending | undefined => {
  const candidate = bus as Partial<Appending>
  return typeof candidate.appended === "function" && typeof candidate.stopAppending === "function"
    ? candidate as Appending
    : undefined
}

/** Once `bus` has appended what was published on it: the run's end is in the store. */
const appendedOn = <R>(shared: Shared<R>, bus: ExecutionEventBus): Promise<void> => {
  const appending = appendingOf(bus)
  if (appending === undefined) return publishedNow
  shared.appending.add(appending)
  return appending.appended().finally(() => shared.appending.delete(appending))
}

/** See `AgentExecutor.make`. */
export const make = <E, R>(
  agent: AgentExecutor.Agent<E, R>,
  options: AgentExecutor.Options<R> = {}
): Effect.Effect<AgentExecutor.EffectAgentExecutor, ConfigurationError | ConfigError.ConfigError, R | Scope.Scope> =>
  Effect.gen(function*() {
    const debug = yield* internalFailure.debugErrorsConfig
    const production = yield* internalFailure.productionConfig
    if (debug && production) {
      if (options.allowDebugErrorsInProduction !== true) {
        return yield* new ConfigurationError({
          reason: "DebugErrorsInProduction",
          message:
            "ADK_DEBUG_ERRORS is on with NODE_ENV=production: failure details would reach callers. Turn it off or set allowDebugErrorsInProduction."
        })
      }
      yield* Effect.logWarning(
        "ADK_DEBUG_ERRORS is on in production: error names and messages of failures are sent to callers"
      )
    }
    const durable = yield* internalDurableExecution.wiringOf(options)
    const shared = yield* makeShared(agent, options, debug, durable)
    const watched = (options as CancelWatchOptions)[cancelWatchOption]
    if (watched !== undefined) shared.cancels = yield* cancelWatch(watched.feed, watched.store, shared.runFork)
    const shutdown = makeShutdown(shared)
    yield* Effect.addFinalizer(() => shutdown(Duration.zero))
    return {
      execute: (context, bus) => execute(shared, context, bus),
      cancelTask: (taskId, bus) => cancelTask(shared, taskId, bus),
      running: Effect.sync(() => shared.executions.size),
      shutdown,
      claim: makeClaim(shared.runs),
      interrupt: (taskId) => {
        for (const run of shared.runs.get(taskId) ?? []) run.fiber.unsafeInterruptAsFork(shutdownFiberId)
      }
    } satisfies AgentExecutor.EffectAgentExecutor
  })

const makeShared = <E, R>(
  agent: AgentExecutor.Agent<E, R>,
  options: AgentExecutor.Options<R>,
  debug: boolean,
  durable: internalDurable.DurableWiring | undefined
) =>
  Effect.map(Effect.all([Effect.runtime<R>(), Effect.clock, Effect.tracer]), ([runtime, clock, tracer]): Shared<R> => {
    const agentName = options.name ?? "agent"
    const runFork = Runtime.runFork(runtime)
    return {
      ...makeTelemetry(agentName, runtime.fiberRefs, tracer, clock),
      agent,
      options,
      runtime,
      logAnnotations: HashMap.set(
        FiberRefs.getOrDefault(runtime.fiberRefs, FiberRef.currentLogAnnotations),
        "agent",
        agentName
      ),
      runFork,
      finals: makeFinals(options, debug),
      settlesInFiber: options.afterExecute !== undefined,
      durable,
      cancels: undefined,
      runs: new Map(),
      pausedContexts: new WeakMap(),
      executions: new Set(),
      appending: new Set(),
      state: { closing: false }
    }
  })

const makeRequest = (context: RequestContext): AgentRequest => ({
  message: fromUserMessage(context.userMessage),
  sdkMessage: context.userMessage,
  taskId: context.taskId,
  contextId: context.contextId,
  task: Option.map(Option.fromNullable(context.task), fromTask),
  sdkTask: Option.fromNullable(context.task),
  headers: internalAuthentication.withoutCredentials(headersOf(context.context), context.context),
  caller: Option.fromNullable(internalAuthentication.callerOf(context.context))
})

/** The task as the run starts it: the SDK requires a task (or message) as the first event of every turn. */
const initialTask = (context: RequestContext): Task => {
  const status = { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: new Date().toISOString() }
  return context.task !== undefined
    ? { ...context.task, status }
    : {
      id: context.taskId,
      contextId: context.contextId,
      status,
      artifacts: [],
      history: [context.userMessage],
      metadata: {}
    }
}

/**
 * The runtime of a run's fiber: it starts with its span, progress and log
 * annotations in place, instead of providing each around the agent, as this
 * runs per request.
 */
const runRuntime = <R>(shared: Shared<R>, request: AgentRequest, span: Tracer.Span | undefined, events: RunEvents) => {
  const { contextId, taskId } = request
  const runtime = shared.runtime
  const annotations = HashMap.mutate(shared.logAnnotations, (map) => {
    HashMap.set(map, "taskId", taskId)
    HashMap.set(map, "contextId", contextId)
    if (span !== undefined) HashMap.set(map, "traceId", span.traceId)
    if (Option.isSome(request.caller)) HashMap.set(map, "caller", request.caller.value.id)
  })
  // One copy of the services instead of one per `Context.add`.
  const services = new Map(runtime.context.unsafeMap)
  services.set(AgentProgress.key, events)
  if (span !== undefined) services.set(Tracer.ParentSpan.key, span)
  return Runtime.make({
    context: Context.unsafeMake<R | AgentProgress>(services),
    runtimeFlags: runtime.runtimeFlags,
    fiberRefs: FiberRefs.updateAs(runtime.fiberRefs, {
      fiberId: FiberId.none,
      fiberRef: FiberRef.currentLogAnnotations,
      value: annotations
    })
  })
}

/**
 * What the hooks did in a run: `entered`, the `afterExecute` hook ran (it
 * runs once per run); `refused`, the `beforeExecute` hook refused it.
 */
interface RunHook {
  entered: boolean
  refused: boolean
}

/** What a run's fiber ends with: its final status, or only its agent's result when settled outside it. */
type FiberEnd = RunEnd | AgentExecutor.AgentResult | typeof admissionRefused

/**
 * The run's fiber: the admission hook and the agent, then, with an
 * `afterExecute` hook, the final status, settled without being
 * interruptible once the agent is done; interruptions end it as they come.
 */
const runFiber = <R>(
  shared: Shared<R>,
  context: RequestContext,
  request: AgentRequest,
  events: RunEvents,
  hook: RunHook
): Effect.Effect<FiberEnd, unknown, R> => {
  const { agent, finals } = shared
  const before = shared.options.beforeExecute
  // Suspended, both: an agent or a hook that throws while building its Effect fails the run like any defect.
  const agentRun: Effect.Effect<AgentExecutor.AgentResult | typeof admissionRefused, unknown, R | AgentProgress> =
    shared.durable === undefined || !(events instanceof DurableEvents)
      ? Effect.suspend(() => agent(request))
      : internalDurableExecution.agentRun(shared.agent, shared.durable, context, request, events, makeRequest)
  const work = (before === undefined
    ? agentRun
    : Effect.flatMap(Effect.suspend(() => before(request)), (refuse) => {
      if (!refuse) return agentRun
      hook.refused = true
      return Effect.succeed(admissionRefused)
    })) as Effect.Effect<AgentExecutor.AgentResult | typeof admissionRefused, unknown, R>
  if (!shared.settlesInFiber) return work
  return Effect.uninterruptibleMask((restore) => {
    const failed = (cause: Cause.Cause<unknown>) =>
      Effect.flatMap(finals.ofFailure(request, cause), (final) => finals.after(request, final, hook, restore))
    return Effect.matchCauseEffect(restore(work), {
      onSuccess: (result): Effect.Effect<RunEnd, never, R> => {
        const problem = outputProblem(result)
        if (problem !== undefined) return failed(Cause.die(new InvalidOutput(problem)))
        const end = ofResult(events, request, result)
        return isReply(end) ? Effect.succeed(end) : finals.after(request, end, hook, restore)
      },
      onFailure: (cause) => Cause.isInterrupted(cause) ? Effect.failCause(cause) : failed(cause)
    })
  })
}

/** Publishes a run's final status; settles once the handler appended it, when it appends (ours). */
const publishFinal = <R>(
  shared: Shared<R>,
  context: RequestContext,
  events: RunEvents,
  published: FinalStatus
): Promise<void> => {
  const bus = events.bus
  const { contextId, taskId } = context
  const event: TaskStatusUpdateEvent = { ...published.event, taskId, contextId }
  if (taskState.isPaused(event.status?.state)) {
    shared.pausedContexts.set(bus, contextId)
  }
  publishStatusUpdate(events, event)
  return appendedOn(shared, bus)
}

/**
 * A run in progress. What its ending needs is kept in fields, not in
 * closures: a run mostly waits, and every closure it holds meanwhile is
 * held once per run in flight. Its own fiber runtime is made again when an
 * ending needs it instead of kept.
 */
class Run<R> implements WatchedRun, RunHook {
  canceled = false
  entered = false
  refused = false
  /** Set when a shutdown gave up on the fiber and ended the task itself. */
  abandoned = false
  fiber!: Fiber.RuntimeFiber<FiberEnd, unknown>
  constructor(
    readonly shared: Shared<R>,
    readonly context: RequestContext,
    readonly request: AgentRequest,
    readonly events: RunEvents,
    readonly span: Tracer.Span | undefined,
    readonly startedAt: number
  ) {}

  private runPromise<A>(effect: Effect.Effect<A, never, R | AgentProgress>): Promise<A> {
    return Runtime.runPromise(runRuntime(this.shared, this.request, this.span, this.events))(effect)
  }

  end(final: RunEnd): Promise<void> {
    finishRun(this.shared, this.span, this.startedAt, this.refused, final)
    if (!isReply(final)) return publishFinal(this.shared, this.context, this.events, final)
    this.events.bus.publish(AgentEvent.message(final.reply))
    return publishedNow
  }

  /** Ends a run whose fiber did not settle it, a failure logged once its status is out. */
  settle(final: RunEnd): Promise<void> {
    const ended = this.end(final)
    if (!isReply(final) && Option.isSome(final.failure)) {
      internalFailure.logFailureOf(this.fiber, failureLogMessage(final.failure.value.errorId), final.failure.value)
    }
    return ended
  }

  complete(exit: Exit.Exit<FiberEnd, unknown>): Promise<void> {
    if (this.abandoned) return Promise.resolve()
    const { events, shared: { durable, runtime } } = this
    if (!(events instanceof DurableEvents) || durable === undefined) return this.settleExit(exit)
    // Stopped by a shutdown, or by a replica that lost its claim, a durable run is left as it is, for the next
    // start (or another replica) to resume.
    if (
      Exit.isFailure(exit) && Cause.isInterruptedOnly(exit.cause) &&
      HashSet.has(Cause.interruptors(exit.cause), shutdownFiberId) &&
      internalDurableExecution.leaves(events, durable, this.context, this.canceled)
    ) {
      return Promise.resolve()
    }
    return this.settleExit(exit).then(() =>
      Runtime.runPromise(runtime)(internalDurableExecution.ended(durable, events, this.context))
    )
  }

  private settleExit(exit: Exit.Exit<FiberEnd, unknown>): Promise<void> {
    const { finals, settlesInFiber, state } = this.shared
    if (!settlesInFiber) {
      if (Exit.isFailure(exit)) return this.settle(finals.ended(this.request, this.canceled, exit.cause))
      const result = exit.value as AgentExecutor.AgentResult | typeof admissionRefused
      const problem = outputProblem(result)
      return this.settle(
        problem === undefined
          ? ofResult(this.events, this.request, result)
          : finals.failed(this.request, Cause.die(new InvalidOutput(problem)))
      )
    }
    if (Exit.isSuccess(exit)) return this.end(exit.value as RunEnd)
    return this.runPromise(
      // A shutdown has a deadline to keep: the runs it ends are settled without the hook.
      Effect.flatMap(
        finals.ofInterruption(this.request, this.canceled, exit.cause),
        (final) => state.closing ? Effect.succeed(final) : finals.after(this.request, final, this)
      )
    ).then((final) => this.end(final))
  }

  /**
   * Ends the task FAILED without waiting for the fiber, which a shutdown could not stop; a durable run is left
   * to be resumed instead (its step runs again there, as after a crash).
   */
  abandon(): Promise<void> {
    if (this.abandoned) return Promise.resolve()
    this.abandoned = true
    this.shared.cancels?.unwatch(this)
    if (internalDurableExecution.leaves(this.events, this.shared.durable, this.context, this.canceled)) {
      return Promise.resolve()
    }
    const cause = Cause.die(
      withoutStackTrace(() =>
        new ShutdownTimeout({ message: "the run did not stop when the server shut down (an uninterruptible step?)" })
      )
    )
    return this.runPromise(this.shared.finals.ofFailure(this.request, cause)).then((final) => this.end(final))
  }
}

/**
 * The ending of a run that threw instead of settling: only reachable on a bug in this module, and still it never
 * leaves the task WORKING.
 */
const runDefect = <R>(
  shared: Shared<R>,
  context: RequestContext,
  events: RunEvents,
  defect: unknown
): Promise<void> => {
  const errorId = ErrorId.make()
  shared.metrics.failed.unsafeUpdate(1, [])
  publishStatusUpdate(
    events,
    textStatus(context.taskId, context.contextId, TaskState.TASK_STATE_FAILED, ErrorId.failureText(errorId))
  )
  return Runtime.runPromise(shared.runtime)(
    internalCauses.logErrorOffSpan(ErrorId.logMessage("Runner failed to execute", errorId), {
      errorId,
      taskId: context.taskId,
      contextId: context.contextId,
      cause: internalCauses.renderCause(Cause.die(defect))
    })
  )
}

/** `ending`, a defect ended by {@link runDefect}; then `done()` is no longer among the executions. */
const finishing = <R>(
  shared: Shared<R>,
  context: RequestContext,
  events: RunEvents,
  ending: Promise<void>,
  done: () => Promise<void>
): Promise<void> =>
  ending.catch((defect) => runDefect(shared, context, events, defect)).finally(() => {
    shared.executions.delete(done())
  })

/** `ending`, counted among the executions until it settles. */
const tracked = <R>(shared: Shared<R>, context: RequestContext, events: RunEvents, ending: Promise<void>) => {
  const done: Promise<void> = finishing(shared, context, events, ending, () => done)
  shared.executions.add(done)
  return done
}

// Plain promises around one fiber per run.
const run = <R>(shared: Shared<R>, context: RequestContext, bus: ExecutionEventBus): Promise<void> => {
  const { runs } = shared
  const taskId = context.taskId
  const request = makeRequest(context)
  const initial = initialTask(context)
  // A run that may answer with a bare message holds its task back until its first event; one that continues a
  // task, or whose caller asked to be answered at once, has its task out at once.
  const holdTask = shared.options.messageReplies === true && context.task === undefined &&
    context.request.configuration?.returnImmediately !== true
  const events = shared.durable === undefined
    ? new RunEvents(bus, taskId, context.contextId, holdTask ? initial : undefined)
    : new DurableEvents(bus, taskId, context.contextId, holdTask ? initial : undefined)
  // A run started again after its process died goes on in its task as the store has it.
  if (!holdTask && !internalDurable.isResume(context)) bus.publish(AgentEvent.task(initial))
  const startedAt = shared.clock.unsafeCurrentTimeMillis()
  const span = runSpan(shared, request)
  const self = new Run(shared, context, request, events, span, startedAt)
  const fiber = Runtime.runFork(runRuntime(shared, request, span, events))(
    runFiber(shared, context, request, events, self)
  )
  self.fiber = fiber
  // A run that never waited has ended already: its final status goes out
  // in this step, as a plain SDK executor's does. A promise step in
  // between costs the server several percent of its throughput.
  const ended = fiber.unsafePoll()
  if (ended !== null) {
    const published = self.complete(ended)
    return published === publishedNow ? published : tracked(shared, context, events, published)
  }
  const forTask = runs.get(taskId) ?? new Set<Run<R>>()
  forTask.add(self)
  runs.set(taskId, forTask)
  if (shared.state.closing) fiber.unsafeInterruptAsFork(shutdownFiberId)
  shared.cancels?.watch(self)
  // One promise and one observer for the whole wait.
  const done: Promise<void> = new Promise((resolve) => {
    fiber.addObserver((exit) => {
      shared.cancels?.unwatch(self)
      forTask.delete(self)
      if (forTask.size === 0) runs.delete(taskId)
      let ending: Promise<void>
      try {
        ending = self.complete(exit)
      } catch (defect) {
        ending = Promise.reject(defect)
      }
      resolve(finishing(shared, context, events, ending, () => done))
    })
  })
  shared.executions.add(done)
  return done
}

const execute = <R>(shared: Shared<R>, context: RequestContext, bus: ExecutionEventBus): Promise<void> => {
  try {
    return run(shared, context, bus)
  } catch (defect) {
    return tracked(
      shared,
      context,
      new RunEvents(bus, context.taskId, context.contextId, undefined),
      Promise.reject(defect)
    )
  }
}

const cancelTask = <R>(shared: Shared<R>, taskId: string, bus: ExecutionEventBus): Promise<void> => {
  const forTask = shared.runs.get(taskId)
  if (forTask !== undefined && forTask.size > 0) {
    for (const run of forTask) {
      run.canceled = true
      run.fiber.unsafeInterruptAsFork(FiberId.none)
    }
  } else {
    // A paused task has no run. A2AServer's handler closes its bus, and the SDK cancels it in the store;
    // a handler that keeps paused tasks' buses open calls here, so end it on that bus.
    bus.publish(AgentEvent.statusUpdate(
      textStatus(taskId, shared.pausedContexts.get(bus) ?? "", TaskState.TASK_STATE_CANCELED, "Task canceled.")
    ))
  }
  return Promise.resolve()
}

/**
 * Waits for the runs, interrupts the rest at the deadline, and ends those
 * that cannot be interrupted yet without them. Runs once, on its own fiber:
 * a caller that stops waiting (a timeout) does not stop it, and a second
 * shutdown (the scope's, after the server's) waits for the first instead of
 * starting over.
 */
const makeShutdown = <R>(shared: Shared<R>) => {
  // Interruptible: shutdown runs in a finalizer, where the timeouts below must still fire.
  const awaitAll = Effect.interruptible(Effect.promise(() => Promise.all(shared.executions)))
  const allRuns = () => Array.from(shared.runs.values()).flatMap((forTask) => Array.from(forTask))
  const stopPersisting = () => {
    for (const appending of shared.appending) appending.stopAppending()
  }
  const stop = (deadline: Duration.DurationInput) =>
    Effect.gen(function*() {
      yield* Effect.timeoutOption(awaitAll, deadline)
      for (const run of allRuns()) run.fiber.unsafeInterruptAsFork(shutdownFiberId)
      stopPersisting()
      // Interrupted runs still publish FAILED and persist it.
      yield* Effect.timeoutOption(awaitAll, Duration.seconds(5))
      // Those that cannot be interrupted yet are ended without them: no task stays WORKING.
      const left = allRuns()
      if (left.length > 0) {
        yield* Effect.timeoutOption(
          Effect.interruptible(Effect.promise(() => Promise.allSettled(left.map((run) => run.abandon())))),
          Duration.seconds(5)
        )
      }
      // Final saves begun since (of interrupted or abandoned runs) stop with the shutdown too.
      stopPersisting()
    })
  let stopping: Fiber.RuntimeFiber<void> | undefined
  return (deadline: Duration.DurationInput): Effect.Effect<void> =>
    Effect.suspend(() => {
      shared.state.closing = true
      return stopping === undefined
        ? Effect.flatMap(Effect.forkDaemon(stop(deadline)), (fiber) => {
          stopping = fiber
          return Fiber.join(fiber)
        })
        : Fiber.join(stopping)
    })
}
