/**
 * Request-level idempotency of the A2A server, as a stage of the request
 * handler (`keying`): `SendMessage` / `SendStreamingMessage` (and the v0.3
 * `message/send` / `message/stream`, which the SDK's legacy transport turns
 * into the same handler calls) with an idempotency key start a task once
 * per key and caller; repeats get that task back, join it while it runs, or
 * are refused when their payload differs.
 *
 * The stage sits on the request handler rather than in a transport: every
 * transport calls it with parsed requests and encodes what it returns, so a
 * replayed task is written in whichever protocol version was asked for.
 * It gives the core handler two options (`Idempotency.hooks`): the task id
 * the ledger recorded for a keyed call's run, and each run's request
 * context, which tells a call that started a run from one refused before.
 * A run in progress in this process is its task's channel (see
 * `handler/channel.ts`).
 *
 * @internal
 */
import type { AgentCard, Message, SendMessageRequest, StreamResponse, Task } from "@a2a-js/sdk"
import { TaskNotFoundError, UnsupportedOperationError } from "@a2a-js/sdk/errors"
import type { ServerCallContext } from "@a2a-js/sdk/server"
import * as Cause from "effect/Cause"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as ExecutionStrategy from "effect/ExecutionStrategy"
import * as Exit from "effect/Exit"
import * as Mailbox from "effect/Mailbox"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type * as AgentExecutor from "../../../AgentExecutor.js"
import type * as IdempotencyLedger from "../../../IdempotencyLedger.js"
import * as Ledger from "../../ledger/ledger.js"
import * as taskState from "../../wire/taskState.js"
import * as internalHandler from "../caller/headers.js"
import type { DurableRuns } from "../durable/durableRuns.js"
import type { Failure, Options as HandlerOptions, RequestHandler } from "../handler/requestHandler.js"
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

// A repeat whose joined entry went begins again, as if it came first; a few times at most, should
// the entry it then finds go too, after which it gets the task as it is.
const maxJoins = 3

const leaseOf = (shared: entry.Shared, prepared: entry.Prepared, held: IdempotencyLedger.Lease) => ({
  ...prepared.ref,
  lease: held,
  duration: shared.lease
})

const logged = <A, E>(effect: Effect.Effect<A, E>) =>
  Effect.catchAllCause(effect, (cause) => Effect.logWarning("idempotency entry could not be recorded", cause))

/**
 * Reads `stream` to its end on a fiber of the server's, under the entry's
 * lease, whether or not anyone still reads what it hands on, then settles
 * the entry. Its events go to the mailbox returned; a reader who leaves
 * shuts it, and what comes after is dropped, not held.
 */
const drive = (
  shared: entry.Shared,
  prepared: entry.Prepared,
  held: IdempotencyLedger.Lease,
  taskId: string,
  context: ServerCallContext,
  stream: Stream.Stream<StreamResponse, Failure>
): Effect.Effect<Mailbox.Mailbox<StreamResponse, Failure>> =>
  Effect.gen(function*() {
    const mailbox = yield* Mailbox.make<StreamResponse, Failure>()
    let last: Task | Message | undefined
    const read = Stream.runForEach(stream, (event) => {
      if (event.payload?.$case === "task" || event.payload?.$case === "message") last = event.payload.value
      return mailbox.offer(event)
    })
    const leased = shared.ledger.withLease(
      leaseOf(shared, prepared, held),
      Effect.flatMap(Effect.exit(read), (exit) => mailbox.done(exit))
    )
    yield* leased.pipe(
      Effect.zipRight(Effect.suspend(() => entry.settle(shared, prepared, held, taskId, context, last))),
      Effect.ensuring(mailbox.end),
      logged,
      Effect.forkIn(shared.scope)
    )
    return mailbox
  })

/**
 * A keyed send's run under its entry's lease, on a fiber of the server's: a
 * caller who leaves does not leave its entry running. Its caller is
 * answered once the entry records a success (a repeat then finds it), at
 * once on a failure (the run may still be writing its end, which the entry
 * then records in the background, a repeat meanwhile joining the running
 * entry); with `returnImmediately`, as soon as the handler answers, the
 * entry waiting for the run's end.
 */
const sent = (
  shared: entry.Shared,
  inner: RequestHandler,
  prepared: entry.Prepared,
  held: IdempotencyLedger.Lease,
  params: SendMessageRequest,
  context: ServerCallContext
): Effect.Effect<Message | Task, Failure> =>
  Effect.gen(function*() {
    const taskId = prepared.outcome.taskId
    const immediately = params.configuration?.returnImmediately === true
    const answer = yield* Deferred.make<Message | Task, Failure>()
    const send = Effect.tap(
      Effect.exit(inner.sendMessage(params, context)),
      (exit) => immediately || Exit.isFailure(exit) ? Deferred.done(answer, exit) : Effect.void
    )
    yield* shared.ledger.withLease(
      leaseOf(shared, prepared, held),
      immediately ? Effect.tap(send, () => entry.runEnded(shared, taskId, context)) : send
    ).pipe(
      Effect.tap((exit) =>
        logged(entry.settle(shared, prepared, held, taskId, context, Exit.isSuccess(exit) ? exit.value : undefined))
      ),
      Effect.flatMap((exit) => Deferred.done(answer, exit)),
      Effect.onExit((exit) => Exit.isFailure(exit) ? Deferred.failCause(answer, exit.cause) : Effect.void),
      Effect.forkIn(shared.scope)
    )
    return yield* Deferred.await(answer)
  })

/** A keyed `SendMessage`. */
const keyedSend = (
  shared: entry.Shared,
  inner: RequestHandler,
  params: SendMessageRequest,
  context: ServerCallContext,
  joins: number
): Effect.Effect<Message | Task, Failure> =>
  Effect.gen(function*() {
    const { taskStore } = shared
    const prepared = yield* entry.begin(shared, params, context, "send")
    const message = params.message
    // begin prepares nothing for a request without a message.
    if (prepared === undefined || message === undefined) return yield* inner.sendMessage(params, context)
    const { outcome } = prepared
    const immediately = params.configuration?.returnImmediately === true
    switch (outcome._tag) {
      case "Finished":
        return yield* entry.recordedNow(shared, outcome.result, context)
      case "Running": {
        if (immediately) return yield* entry.snapshot(taskStore, outcome.taskId, context, message)
        const joined = yield* entry.join(shared, prepared, outcome.taskId, context, message)
        if (joined !== undefined) return joined
        return yield* joins < maxJoins
          ? keyedSend(shared, inner, params, context, joins + 1)
          : entry.snapshot(taskStore, outcome.taskId, context, message)
      }
      case "Started": {
        const taskId = outcome.taskId
        shared.assigned.set(context, taskId)
        if (!immediately || shared.card.capabilities?.streaming !== true) {
          return yield* sent(shared, inner, prepared, outcome.lease, params, context)
        }
        // Streamed, the answer is its first event, and the run goes on: its end is what the entry records.
        const mailbox = yield* drive(
          shared,
          prepared,
          outcome.lease,
          taskId,
          context,
          inner.sendMessageStream(params, context)
        )
        const first = yield* mailbox.take.pipe(
          Effect.catchIf(Cause.isNoSuchElementException, () => Effect.succeed(undefined)),
          Effect.ensuring(mailbox.shutdown)
        )
        const payload = first?.payload
        if (payload?.$case === "task" || payload?.$case === "message") return payload.value
        return yield* entry.snapshot(taskStore, taskId, context, message)
      }
    }
  })

/** A repeat's stream while its entry runs: the run's events as they come, else its end once recorded. */
const joinedStream = (
  shared: entry.Shared,
  inner: RequestHandler,
  prepared: entry.Prepared,
  params: SendMessageRequest,
  context: ServerCallContext,
  message: Message,
  joins: number
): Stream.Stream<StreamResponse, Failure> => {
  const { follow, subscriptions, taskStore } = shared
  const taskId = prepared.outcome.taskId
  const subscription = { tenant: params.tenant, id: taskId }
  // Run on any replica, with replication: its events are followed from the shared log. Run by this
  // process: as they come, like a subscription, so that a caller who leaves lets go of its channel at
  // once. Run elsewhere, or ended meanwhile: its end is awaited.
  const local = follow === undefined && subscriptions.channels.get(taskId, context) !== undefined
  if (local) subscriptions.subscribing(context)
  const followed = follow !== undefined
    ? follow(inner, subscription, context)
    : local
    ? inner.resubscribe(subscription, context)
    : Stream.empty
  let ended = false
  const turn = followed.pipe(
    Stream.takeUntil(endsTurn),
    Stream.tap((event) => Effect.sync(() => void (ended = endsTurn(event)))),
    // Ended between the check and the subscription, or no task out yet (the run may answer with a bare
    // message): awaited below.
    Stream.catchAll((error) =>
      error instanceof UnsupportedOperationError || error instanceof TaskNotFoundError
        ? Stream.empty
        : Stream.fail(error)
    )
  )
  const awaited = Stream.unwrap(Effect.gen(function*() {
    // Its reader left: nobody waits for the end.
    if (ended || (local && subscriptions.closed(context))) return Stream.empty
    const joined = yield* entry.join(shared, prepared, taskId, context, message)
    if (joined === undefined && joins < maxJoins) return keyedStream(shared, inner, params, context, joins + 1)
    return Stream.succeed(toStreamResponse(joined ?? (yield* entry.snapshot(taskStore, taskId, context, message))))
  }))
  return Stream.concat(turn, awaited)
}

/** A keyed `SendStreamingMessage`. */
const keyedStream = (
  shared: entry.Shared,
  inner: RequestHandler,
  params: SendMessageRequest,
  context: ServerCallContext,
  joins: number
): Stream.Stream<StreamResponse, Failure> =>
  Stream.unwrap(Effect.gen(function*() {
    const prepared = yield* entry.begin(shared, params, context, "stream")
    const message = params.message
    // begin prepares nothing for a request without a message.
    if (prepared === undefined || message === undefined) return inner.sendMessageStream(params, context)
    const { outcome } = prepared
    switch (outcome._tag) {
      case "Finished":
        return Stream.succeed(toStreamResponse(yield* entry.recordedNow(shared, outcome.result, context)))
      case "Running":
        return joinedStream(shared, inner, prepared, params, context, message, joins)
      case "Started": {
        shared.assigned.set(context, outcome.taskId)
        const mailbox = yield* drive(
          shared,
          prepared,
          outcome.lease,
          outcome.taskId,
          context,
          inner.sendMessageStream(params, context)
        )
        return Stream.ensuring(Mailbox.toStream(mailbox), mailbox.shutdown)
      }
    }
  }))

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
 * What the idempotency stage holds for the server's lifetime: the options
 * the core handler is made with, the hold it takes on the task a message
 * continues (see `internalStages.Claim`), and the ledger's state.
 *
 * @internal
 */
export interface Idempotency {
  /** The core handler's options (see `handler/core.ts`): the ledger's task id for a keyed run, and each run's context. */
  readonly hooks: Required<Pick<HandlerOptions, "taskIdFor" | "onRequestContext">>
  readonly claim: internalStages.Claim
  /**
   * For a message to a task whose run another replica holds: a keyed one
   * goes on to the ledger, which joins a repeat to its run and refuses a
   * new key (true); an unkeyed one is the caller's to refuse (false).
   */
  readonly heldElsewhere: (params: SendMessageRequest, context: ServerCallContext) => boolean
  readonly shared: entry.Shared
}

/**
 * The idempotency stage's state, with the ledger sweep forked in the
 * current scope (the server's lifetime). The core handler is made with its
 * `hooks`, then keyed by {@link keying}.
 *
 * @internal
 */
export const make = (deps: {
  readonly card: AgentCard
  readonly executor: Pick<AgentExecutor.EffectAgentExecutor, "claim">
  /** The handler's channels, and what subscribes to them. */
  readonly subscriptions: internalSubscription.Subscriptions
  readonly options: entry.Options
  readonly follow?: entry.Follow | undefined
  /** Where a durable agent's runs are kept: a task whose run is there goes on, and is never recorded FAILED. */
  readonly durable?: DurableRuns | undefined
}): Effect.Effect<Idempotency, never, IdempotencyLedger.IdempotencyLedger | internalStore.TaskStore | Scope.Scope> =>
  Effect.gen(function*() {
    const ledger = yield* Ledger.IdempotencyLedger
    const taskStore = yield* internalStore.TaskStore
    const { card, executor, options, subscriptions } = deps
    const onExpired = entry.expiring(taskStore, deps.durable)
    yield* Effect.forkScoped(Ledger.sweep({ onExpired, every: options.sweepEvery }))
    // Made before the server's shutdown is added to its scope, so closed after it: runs end, and are recorded, first.
    const scope = yield* Scope.fork(yield* Effect.scope, ExecutionStrategy.sequential)
    const shared: entry.Shared = {
      ledger,
      card,
      taskStore,
      subscriptions,
      follow: deps.follow,
      scope,
      lease: options.lease ?? Duration.seconds(30),
      wait: options.wait ?? Duration.seconds(30),
      options,
      onExpired,
      durable: deps.durable,
      unheld: new WeakSet(),
      assigned: new WeakMap(),
      runContexts: new WeakMap()
    }
    const hooks: Idempotency["hooks"] = {
      // The ledger recorded the task id of a keyed message before its run: the run gets that one.
      taskIdFor: (context) => {
        const taskId = shared.assigned.get(context)
        if (taskId !== undefined) shared.assigned.delete(context)
        return taskId
      },
      onRequestContext: (built) => void shared.runContexts.set(built.context, built.contextId)
    }
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
    return { hooks, claim, heldElsewhere, shared }
  })

/**
 * `inner` (the core handler, made with `idempotency.hooks`) with idempotent
 * sends: every other call goes to `inner` as it came.
 *
 * @internal
 */
export const keying = (inner: RequestHandler, idempotency: Idempotency): RequestHandler => ({
  ...inner,
  sendMessage: (params, context) => keyedSend(idempotency.shared, inner, params, context, 1),
  sendMessageStream: (params, context) => keyedStream(idempotency.shared, inner, params, context, 1)
})
