/**
 * Request-level idempotency of the A2A server: `SendMessage` /
 * `SendStreamingMessage` (and the v0.3 `message/send` / `message/stream`,
 * which the SDK's legacy transport turns into the same handler calls) with an
 * idempotency key start a task once per key and caller; repeats get that
 * task back, join it while it runs, or are refused when their payload
 * differs.
 *
 * The hook sits in the request handler rather than in the JSON-RPC layer:
 * both transports call it with parsed requests and encode what it returns,
 * so a replayed task is written in whichever protocol version was asked for.
 *
 * @internal
 *
 * @internal
 */
import { type AgentCard, type Message, type SendMessageRequest, type StreamResponse, type Task } from "@a2a-js/sdk"
import { TaskNotFoundError, UnsupportedOperationError } from "@a2a-js/sdk/errors"
import type {
  A2ARequestHandler,
  AgentExecutor as SdkAgentExecutor,
  PushNotificationStore,
  ServerCallContext
} from "@a2a-js/sdk/server"
import * as Cause from "effect/Cause"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Runtime from "effect/Runtime"
import type * as Scope from "effect/Scope"
import type * as AgentExecutor from "../../../AgentExecutor.js"
import type * as IdempotencyLedger from "../../../IdempotencyLedger.js"
import * as Ledger from "../../ledger/ledger.js"
import * as taskState from "../../wire/taskState.js"
import * as internalHandler from "../caller/headers.js"
import * as internalRequestHandler from "../handler/requestHandler.js"
import * as internalSdkHandler from "../handler/sdkHandler.js"
import type * as internalStages from "../handler/stages.js"
import type * as internalSubscription from "../handler/subscription.js"
import * as internalStore from "../store/store.js"
import * as entry from "./idempotencyEntry.js"

const toStreamResponse = (result: Task | Message): StreamResponse =>
  "status" in result
    ? { payload: { $case: "task", value: result } }
    : { payload: { $case: "message", value: result as Message } }

/** Whether a stream event ends the turn: a final or interrupted state. */
const endsTurn = (event: StreamResponse): boolean => {
  const payload = event.payload
  if (payload?.$case === "statusUpdate") return taskState.isSettled(payload.value.status?.state)
  if (payload?.$case === "task") return taskState.isSettled(payload.value.status?.state)
  return payload?.$case === "message"
}

/** A one-producer, one-consumer queue of events; the consumer may leave early, the producer goes on. */
class Relay<A> {
  private readonly items: Array<A> = []
  private done = false
  private error: { readonly value: unknown } | undefined
  private wake: (() => void) | undefined
  push(item: A) {
    this.items.push(item)
    this.notify()
  }
  end(error?: { readonly value: unknown }) {
    this.done = true
    this.error = error
    this.notify()
  }
  private notify() {
    const wake = this.wake
    this.wake = undefined
    wake?.()
  }
  async *iterate(): AsyncGenerator<A, void, undefined> {
    while (true) {
      const item = this.items.shift()
      if (item !== undefined) {
        yield item
        continue
      }
      if (this.done) {
        if (this.error !== undefined) throw this.error.value
        return
      }
      await new Promise<void>((resolve) => {
        this.wake = resolve
      })
    }
  }
}

// A repeat whose joined entry went begins again, as if it came first; a few times at most, should
// the entry it then finds go too, after which it gets the task as it is.
const maxJoins = 3

/** `executor`, with the runs it starts noted in `runs` and the calls that started them in `ran`. */
const watching = (
  executor: SdkAgentExecutor,
  runs: Map<string, Promise<void>>,
  ran: WeakSet<ServerCallContext>
): SdkAgentExecutor => ({
  execute: (context, bus) => {
    if (context.context !== undefined) ran.add(context.context)
    const run = executor.execute(context, bus)
    runs.set(context.taskId, run)
    const forget = () => {
      if (runs.get(context.taskId) === run) runs.delete(context.taskId)
    }
    run.then(forget, forget)
    return run
  },
  cancelTask: (taskId, bus) => executor.cancelTask(taskId, bus)
})

/** Runs the stream in the background, to its end, whether or not anyone still reads it. */
const drive = (
  shared: entry.Shared,
  prepared: entry.Prepared,
  held: IdempotencyLedger.Lease,
  taskId: string,
  context: ServerCallContext,
  stream: () => AsyncGenerator<StreamResponse, void, undefined>
): Relay<StreamResponse> => {
  const relay = new Relay<StreamResponse>()
  const consume = async () => {
    let last: Task | Message | undefined
    try {
      for await (const event of stream()) {
        if (event.payload?.$case === "task" || event.payload?.$case === "message") last = event.payload.value
        relay.push(event)
      }
      relay.end()
    } catch (error) {
      relay.end({ value: error })
    }
    return last
  }
  shared.runFork(
    shared.ledger.withLease({ ...prepared.ref, lease: held, duration: shared.lease }, Effect.promise(consume)).pipe(
      Effect.flatMap((last) => entry.settle(shared, prepared, held, taskId, context, last)),
      Effect.catchAllCause((cause) => Effect.logWarning("idempotency entry could not be recorded", cause))
    )
  )
  return relay
}

/** A keyed `SendMessage`: `sendOnce` is the SDK's send, `stream` its streaming send, of the same call. */
const keyedSend = (
  shared: entry.Shared,
  sendOnce: () => Promise<Message | Task>,
  stream: () => AsyncGenerator<StreamResponse, void, undefined>,
  params: SendMessageRequest,
  context: ServerCallContext,
  joins: number
): Effect.Effect<Message | Task, unknown> =>
  Effect.gen(function*() {
    const { lease, ledger, taskStore } = shared
    const prepared = yield* entry.begin(shared, params, context, "send")
    const message = params.message
    // begin prepares nothing for a request without a message.
    if (prepared === undefined || message === undefined) return yield* Effect.promise(sendOnce)
    const { outcome } = prepared
    switch (outcome._tag) {
      case "Finished":
        return entry.decode(outcome.result)
      case "Running": {
        if (params.configuration?.returnImmediately === true) {
          return yield* entry.snapshot(taskStore, outcome.taskId, context, message)
        }
        const joined = yield* entry.join(shared, prepared, outcome.taskId, context, message)
        if (joined !== undefined) return joined
        return yield* joins < maxJoins
          ? keyedSend(shared, sendOnce, stream, params, context, joins + 1)
          : entry.snapshot(taskStore, outcome.taskId, context, message)
      }
      case "Started": {
        const taskId = outcome.taskId
        shared.assigned.set(context, taskId)
        if (params.configuration?.returnImmediately === true && shared.card.capabilities?.streaming === true) {
          // Runs on in the background: its end is what the entry records.
          const relay = drive(shared, prepared, outcome.lease, taskId, context, stream)
          const first = yield* Effect.promise(() => relay.iterate().next())
          if (first.done !== true) {
            const payload = first.value.payload
            if (payload?.$case === "task" || payload?.$case === "message") return payload.value
          }
          return yield* entry.snapshot(taskStore, taskId, context, message)
        }
        if (params.configuration?.returnImmediately === true) {
          // Answered as soon as the SDK answers; the entry waits in the background for the run's end.
          const answered = yield* Deferred.make<Message | Task, unknown>()
          shared.runFork(
            ledger.withLease(
              { ...prepared.ref, lease: outcome.lease, duration: lease },
              Effect.tryPromise({ try: sendOnce, catch: (error) => error }).pipe(
                Effect.exit,
                Effect.tap((exit) => Deferred.done(answered, exit)),
                Effect.flatMap((exit) =>
                  Effect.as(entry.runEnded(shared, taskId), Exit.getOrElse(exit, () => undefined))
                )
              )
            ).pipe(
              Effect.onExit((exit) => Exit.isFailure(exit) ? Deferred.failCause(answered, exit.cause) : Effect.void),
              Effect.flatMap((result) => entry.settle(shared, prepared, outcome.lease, taskId, context, result)),
              Effect.catchAllCause((cause) => Effect.logWarning("idempotency entry could not be recorded", cause))
            )
          )
          return yield* Deferred.await(answered)
        }
        const exit = yield* ledger.withLease(
          { ...prepared.ref, lease: outcome.lease, duration: lease },
          Effect.tryPromise({ try: sendOnce, catch: (error) => error })
        ).pipe(Effect.exit)
        const settling = entry.settle(
          shared,
          prepared,
          outcome.lease,
          taskId,
          context,
          exit._tag === "Success" ? exit.value : undefined
        ).pipe(Effect.catchAll((error) => Effect.logWarning("idempotency entry could not be recorded", error)))
        // A failed answer is not held back: the run may still be writing its end, which the entry then
        // records in the background (a repeat meanwhile joins the running entry).
        if (exit._tag === "Success") yield* settling
        else shared.runFork(settling)
        return yield* exit
      }
    }
  })

/**
 * The request handler with idempotent sends: every other call goes to
 * `inner` as it came.
 */
class IdempotentRequestHandler implements A2ARequestHandler {
  constructor(private readonly idempotent: entry.Shared, private readonly inner: A2ARequestHandler) {}

  getAgentCard: A2ARequestHandler["getAgentCard"] = () => this.inner.getAgentCard()
  getAuthenticatedExtendedAgentCard: A2ARequestHandler["getAuthenticatedExtendedAgentCard"] = (params, context) =>
    this.inner.getAuthenticatedExtendedAgentCard(params, context)
  getTask: A2ARequestHandler["getTask"] = (params, context) => this.inner.getTask(params, context)
  listTasks: A2ARequestHandler["listTasks"] = (params, context) => this.inner.listTasks(params, context)
  cancelTask: A2ARequestHandler["cancelTask"] = (params, context) => this.inner.cancelTask(params, context)
  resubscribe: A2ARequestHandler["resubscribe"] = (params, context) => this.inner.resubscribe(params, context)
  createTaskPushNotificationConfig: A2ARequestHandler["createTaskPushNotificationConfig"] = (params, context) =>
    this.inner.createTaskPushNotificationConfig(params, context)
  getTaskPushNotificationConfig: A2ARequestHandler["getTaskPushNotificationConfig"] = (params, context) =>
    this.inner.getTaskPushNotificationConfig(params, context)
  listTaskPushNotificationConfigs: A2ARequestHandler["listTaskPushNotificationConfigs"] = (params, context) =>
    this.inner.listTaskPushNotificationConfigs(params, context)
  deleteTaskPushNotificationConfig: A2ARequestHandler["deleteTaskPushNotificationConfig"] = (params, context) =>
    this.inner.deleteTaskPushNotificationConfig(params, context)

  sendMessage(params: SendMessageRequest, context: ServerCallContext): Promise<Message | Task> {
    const sendOnce = () => this.inner.sendMessage(params, context)
    const stream = () => this.inner.sendMessageStream(params, context)
    return this.idempotent.runPromise(keyedSend(this.idempotent, sendOnce, stream, params, context, 1))
  }

  sendMessageStream(
    params: SendMessageRequest,
    context: ServerCallContext
  ): AsyncGenerator<StreamResponse, void, undefined> {
    return this.keyedStream(params, context, 1)
  }

  private async *keyedStream(
    params: SendMessageRequest,
    context: ServerCallContext,
    joins: number
  ): AsyncGenerator<StreamResponse, void, undefined> {
    const shared = this.idempotent
    const prepared = await shared.runPromise(entry.begin(shared, params, context, "stream"))
    const message = params.message
    // begin prepares nothing for a request without a message.
    if (prepared === undefined || message === undefined) {
      yield* this.inner.sendMessageStream(params, context)
      return
    }
    const { outcome } = prepared
    switch (outcome._tag) {
      case "Finished":
        yield toStreamResponse(entry.decode(outcome.result))
        return
      case "Running": {
        // Run on any replica, with replication: its events are followed from the shared log.
        if (shared.follow !== undefined) {
          try {
            for await (const event of shared.follow(this, { tenant: params.tenant, id: outcome.taskId }, context)) {
              yield event
              if (endsTurn(event)) return
            }
          } catch (error) {
            // Ended meanwhile, or a run with no task to follow (it may answer with a bare message): awaited below.
            if (!(error instanceof UnsupportedOperationError || error instanceof TaskNotFoundError)) throw error
          }
        } else if (shared.runs.has(outcome.taskId)) {
          // Run by this process: its events are followed as they come. Run
          // elsewhere, or ended meanwhile: its end is awaited.
          // Followed like a subscription: a caller who leaves lets go of the bus at once.
          shared.subscriptions.subscribing(context)
          try {
            for await (const event of this.inner.resubscribe({ tenant: params.tenant, id: outcome.taskId }, context)) {
              yield event
              if (endsTurn(event)) return
            }
          } catch (error) {
            // The run ended between the check and the subscription (the
            // SDK refuses to subscribe to a finished task), or has no task
            // out yet (it may answer with a bare message): awaited below.
            if (!(error instanceof UnsupportedOperationError || error instanceof TaskNotFoundError)) throw error
          }
          // Its reader left: nobody waits for the end.
          if (shared.subscriptions.closed(context)) return
        }
        const joined = await shared.runPromise(entry.join(shared, prepared, outcome.taskId, context, message))
        if (joined === undefined && joins < maxJoins) {
          yield* this.keyedStream(params, context, joins + 1)
          return
        }
        yield toStreamResponse(
          joined ?? await shared.runPromise(entry.snapshot(shared.taskStore, outcome.taskId, context, message))
        )
        return
      }
      case "Started": {
        shared.assigned.set(context, outcome.taskId)
        const relay = drive(
          shared,
          prepared,
          outcome.lease,
          outcome.taskId,
          context,
          () => this.inner.sendMessageStream(params, context)
        )
        yield* relay.iterate()
      }
    }
  }
}

// Whether a message carries an idempotency key; a key it cannot carry (refused later) counts as one.
const keyed = (params: SendMessageRequest, context: ServerCallContext): boolean => {
  if (params.message === undefined) return false
  try {
    return entry.keyOf(params.message, internalHandler.headersOf(context)) !== undefined
  } catch {
    return true
  }
}

/**
 * A request handler and the hold it takes on the task a message continues
 * (see `internalStages.Claim`).
 *
 * @internal
 */
export interface Made {
  readonly handler: A2ARequestHandler
  readonly claim: internalStages.Claim
  /**
   * For a message to a task whose run another replica holds: a keyed one
   * goes on to the ledger, which joins a repeat to its run and refuses a
   * new key (true); an unkeyed one is the caller's to refuse (false).
   */
  readonly heldElsewhere?: (params: SendMessageRequest, context: ServerCallContext) => boolean
}

/**
 * The SDK's request handler with idempotent sends, the claim that lets a
 * keyed message to a running task through to the ledger, and the ledger
 * sweep forked in the current scope (the server's lifetime).
 *
 * @internal
 */
export const make = (deps: {
  readonly card: AgentCard
  readonly extendedCard: AgentCard | undefined
  readonly executor: AgentExecutor.EffectAgentExecutor
  /** The handler's event buses, and what subscribes to them. */
  readonly subscriptions: internalSubscription.Subscriptions
  readonly options: entry.Options
  readonly pushStore: PushNotificationStore | undefined
  readonly follow?: entry.Shared["follow"]
  readonly appendRetryMillis: number
}): Effect.Effect<Made, never, IdempotencyLedger.IdempotencyLedger | internalStore.TaskStore | Scope.Scope> =>
  Effect.gen(function*() {
    const ledger = yield* Ledger.IdempotencyLedger
    const runtime = yield* Effect.runtime<never>()
    // The ledger's reads and writes of a task are promises: the store's service seen in the SDK's shape.
    const taskStore = internalStore.toSdk(yield* internalStore.TaskStore, runtime)
    const runPromiseExit = Runtime.runPromiseExit(runtime)
    // Rejects with the error itself, not a FiberFailure: the SDK's transports
    // map its own errors (e.g. -32602) by their class.
    const runPromise = <A, E>(effect: Effect.Effect<A, E>): Promise<A> =>
      runPromiseExit(effect).then((exit) => {
        if (Exit.isSuccess(exit)) return exit.value
        throw Cause.squash(exit.cause)
      })
    const { card, executor, options, subscriptions } = deps
    const onExpired = entry.expiring(taskStore)
    yield* Effect.forkScoped(Ledger.sweep({ onExpired, every: options.sweepEvery }))
    const shared: entry.Shared = {
      ledger,
      runPromise,
      runFork: Runtime.runFork(runtime),
      card,
      extendedCard: deps.extendedCard,
      taskStore,
      subscriptions,
      follow: deps.follow,
      pushStore: deps.pushStore,
      lease: options.lease ?? Duration.seconds(30),
      wait: options.wait ?? Duration.seconds(30),
      options,
      onExpired,
      unheld: new WeakSet(),
      assigned: new WeakMap(),
      runContexts: new WeakMap(),
      runs: new Map(),
      ran: new WeakSet()
    }
    const inner = yield* internalRequestHandler.make({
      card,
      extendedCard: deps.extendedCard,
      executor: watching(executor, shared.runs, shared.ran),
      channels: subscriptions.channels,
      pushStore: deps.pushStore,
      appendRetryMillis: deps.appendRetryMillis,
      // The ledger recorded the task id of a keyed message before its run: the run gets that one.
      taskIdFor: (context) => {
        const taskId = shared.assigned.get(context)
        if (taskId !== undefined) shared.assigned.delete(context)
        return taskId
      },
      onRequestContext: (built) => void shared.runContexts.set(built.context, built.contextId)
    })
    const handler = new IdempotentRequestHandler(shared, internalSdkHandler.toSdk(inner, runtime))
    // A keyed message goes on to the ledger, which joins a repeat to its run; a new key, it refuses.
    const heldElsewhere = (params: SendMessageRequest, context: ServerCallContext): boolean => {
      if (!keyed(params, context)) return false
      shared.unheld.add(context)
      return true
    }
    const claim: internalStages.Claim = (taskId, params, context) => {
      const release = executor.claim(taskId)
      return release !== undefined || !heldElsewhere(params, context) ? release : () => {}
    }
    return { handler, claim, heldElsewhere }
  })
