/**
 * The idempotency entry of a keyed request in the ledger: its key and
 * payload digest, how it begins, how a repeat joins it while it runs, how it
 * is settled after its run, and how an entry whose replica died is recorded
 * FAILED. The idempotency stage of `./idempotency.ts` runs these steps,
 * reading and writing tasks through the `TaskStore` service.
 *
 * @internal
 */
import {
  type AgentCard,
  type Message,
  Message as MessageCodec,
  type SendMessageRequest,
  type StreamResponse,
  type SubscribeToTaskRequest,
  type Task,
  Task as TaskCodec,
  TaskState
} from "@a2a-js/sdk"
import { RequestMalformedError, TaskNotFoundError } from "@a2a-js/sdk/errors"
import { ServerCallContext, UnauthenticatedUser, type User } from "@a2a-js/sdk/server"
import * as Cause from "effect/Cause"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"
import type * as Stream from "effect/Stream"
import { randomUUID } from "node:crypto"
import type * as IdempotencyLedger from "../../../IdempotencyLedger.js"
import { IdempotencyError } from "../../ledger/errors.js"
import { fingerprint } from "../../ledger/key.js"
import * as internalCauses from "../../observability/causes.js"
import * as ErrorId from "../../wire/errorId.js"
import * as IdempotencyKey from "../../wire/idempotencyKey.js"
import * as wireParts from "../../wire/parts.js"
import * as taskState from "../../wire/taskState.js"
import * as internalAuthentication from "../caller/authentication.js"
import * as internalHandler from "../caller/headers.js"
import type { DurableRuns } from "../durable/durableRuns.js"
import type { Failure, RequestHandler } from "../handler/requestHandler.js"
import { stillRunning } from "../handler/stages.js"
import type * as internalSubscription from "../handler/subscription.js"
import type { TaskStore } from "../store/store.js"

/** @internal */
export type Headers = internalHandler.RequestHeaders

/** @internal */
export interface Options {
  readonly identity?: ((headers: Headers, user: User | undefined) => IdempotencyLedger.Identity) | undefined
  readonly lease?: Duration.DurationInput | undefined
  readonly wait?: Duration.DurationInput | undefined
  readonly sweepEvery?: Duration.DurationInput | undefined
}

/** The text of a key sent twice with different values. */
const keyMismatchText = "idempotency key differs between the Idempotency-Key header and the message metadata"

const conflictText = "idempotency key reused with a different request"

/** What is stored as the result of an entry: the JSON-RPC `SendMessage` result shape. */
export type Stored = { readonly task: unknown } | { readonly message: unknown }

const firstHeader = (value: string | ReadonlyArray<string> | undefined): string | undefined =>
  typeof value === "string" || value === undefined ? value : value[0]

/**
 * The key of a request: from the message metadata or the `Idempotency-Key`
 * header; when both are present they must agree.
 *
 * @internal
 */
export const keyOf = (message: Message, headers: Headers): string | undefined => {
  const fromMetadata: unknown = message.metadata?.[IdempotencyKey.metadataKey]
  const fromHeader = firstHeader(headers[IdempotencyKey.headerName.toLowerCase()])
  if (fromMetadata !== undefined && typeof fromMetadata !== "string") {
    throw new RequestMalformedError(`message metadata ${IdempotencyKey.metadataKey} must be a string`)
  }
  if (fromMetadata !== undefined && fromHeader !== undefined && fromMetadata !== fromHeader) {
    throw new RequestMalformedError(keyMismatchText)
  }
  const key = fromMetadata ?? fromHeader
  return key === undefined || key === "" ? undefined : key
}

/**
 * The payload digest: the message as sent, without its `messageId` (a resend
 * gets a new one) and without the key itself, plus whether it was streamed.
 *
 * @internal
 */
export const fingerprintOf = (message: Message, kind: "send" | "stream"): string => {
  const { [IdempotencyKey.metadataKey]: _key, ...metadata } = message.metadata ?? {}
  const json = MessageCodec.toJSON({ ...message, messageId: "", metadata }) as Record<string, unknown>
  return fingerprint({ kind, message: json })
}

/** The default identity: the A2A tenant and the authenticated user's name; anonymous otherwise. */
const defaultIdentity = (context: ServerCallContext): IdempotencyLedger.Identity => ({
  tenant: context.tenant ?? "",
  user: context.user?.isAuthenticated === true ? context.user.userName : ""
})

/** @internal */
export const decode = (stored: unknown): Task | Message => {
  if (typeof stored === "object" && stored !== null) {
    if ("task" in stored) return TaskCodec.fromJSON((stored as { task: unknown }).task)
    if ("message" in stored) return MessageCodec.fromJSON((stored as { message: unknown }).message)
  }
  throw new Error("idempotency ledger holds a result that is not a task or a message")
}

/**
 * What a repeat gets of a finished entry: its recorded end. A task recorded
 * while its durable run went on (see {@link goesOn}) is read from the store
 * instead, where the resumed run brings it to its end.
 *
 * @internal
 */
export const recordedNow = (
  shared: Shared,
  result: unknown,
  context: ServerCallContext
): Effect.Effect<Task | Message> =>
  Effect.suspend(() => {
    const recorded = decode(result)
    if (!("status" in recorded) || taskState.isSettled(recorded.status?.state)) return Effect.succeed(recorded)
    return Effect.map(
      Effect.orElseSucceed(shared.taskStore.get(recorded.id, context), () => undefined),
      (now) => now ?? recorded
    )
  })

/** @internal */
export const encode = (result: Task | Message): Stored =>
  "status" in result ? { task: TaskCodec.toJSON(result) } : { message: MessageCodec.toJSON(result as Message) }

/**
 * With replication: a run on any replica followed from the shared log
 * (see `replication.ts`), through `handler`'s checks.
 *
 * @internal
 */
export type Follow = (
  handler: RequestHandler,
  params: SubscribeToTaskRequest,
  context: ServerCallContext
) => Stream.Stream<StreamResponse, Failure>

/**
 * What the parts of the idempotency stage share: built once, by `make` of
 * `./idempotency.ts`, for the server's lifetime.
 *
 * @internal
 */
export interface Shared {
  readonly ledger: IdempotencyLedger.Service
  readonly card: AgentCard
  readonly taskStore: TaskStore
  /**
   * The handler's channels, one per task with a run in progress in this
   * process, and what subscribes to them.
   */
  readonly subscriptions: internalSubscription.Subscriptions
  readonly follow: Follow | undefined
  /**
   * Where a keyed run's lease and record live on once its caller is
   * answered or gone: closed after the server's shutdown has let runs end.
   */
  readonly scope: Scope.Scope
  readonly lease: Duration.DurationInput
  readonly wait: Duration.DurationInput
  /** Read on every request, as the caller may have given them. */
  readonly options: Pick<Options, "identity">
  readonly onExpired: ReturnType<typeof expiring>
  /** Where a durable agent's runs are kept (see {@link goesOn}). */
  readonly durable: DurableRuns | undefined
  /** Keyed messages let through to the ledger although a run of their task was in progress here. */
  readonly unheld: WeakSet<ServerCallContext>
  readonly assigned: WeakMap<ServerCallContext, string>
  /**
   * The context id the handler gave each call's run, for a task recorded
   * without the store; the calls that started a run. A call refused before
   * (a message to a task that has ended) must not record that task as its
   * result.
   */
  readonly runContexts: WeakMap<ServerCallContext, string>
}

const identityOf = (shared: Shared, context: ServerCallContext) =>
  shared.options.identity === undefined
    ? defaultIdentity(context)
    : shared.options.identity(internalHandler.headersOf(context), context.user)

// The store is scoped by tenant and owner: the entry's user is its caller (see `IdempotencyOptions.identity`).
const storeContext = ({ tenant, user }: IdempotencyLedger.Identity) =>
  new ServerCallContext({
    user: user === "" ? new UnauthenticatedUser() : new internalAuthentication.CallerUser({ id: user, name: user }),
    ...(tenant === "" ? {} : { tenant })
  })

/**
 * The task ended FAILED under a new error id, with what is known of it.
 *
 * @internal
 */
export const failedTask = (
  taskId: string,
  contextId: string,
  existing: Task | undefined
): { readonly errorId: string; readonly task: Task } => {
  const errorId = ErrorId.make()
  const task: Task = {
    id: taskId,
    contextId,
    artifacts: existing?.artifacts ?? [],
    history: existing?.history ?? [],
    metadata: existing?.metadata ?? {},
    status: {
      state: TaskState.TASK_STATE_FAILED,
      message: wireParts.agentMessage(taskId, contextId, [wireParts.textPart(ErrorId.failureText(errorId))]),
      timestamp: new Date().toISOString()
    }
  }
  return { errorId, task }
}

/** The whole task as a run's first event: on a stored one, its status and history replace the stored ones. */
const saveWhole = (taskStore: TaskStore, task: Task, context: ServerCallContext) =>
  taskStore.append(task.id, [{ kind: "task", data: task }], context)

/**
 * A replica stopped renewing its lease: record the task FAILED, reason interrupted.
 *
 * @internal
 */
export const expiring = (taskStore: TaskStore, durable?: DurableRuns) => (entry: IdempotencyLedger.Entry) =>
  Effect.gen(function*() {
    const context = storeContext(entry.identity)
    const existing = yield* taskStore.get(entry.taskId, context)
    // Its replica saved the end but died before recording it, or its durable run goes on elsewhere: keep it.
    if (
      existing !== undefined &&
      (taskState.isSettled(existing.status?.state) || (yield* goesOn(durable, entry.taskId, context)))
    ) return encode(existing)
    const { errorId, task: failed } = failedTask(entry.taskId, existing?.contextId || randomUUID(), existing)
    yield* saveWhole(taskStore, failed, context)
    yield* Effect.logError("Task interrupted: its replica stopped before it ended").pipe(
      Effect.annotateLogs({
        errorId,
        reason: "interrupted",
        taskId: entry.taskId,
        idempotencyKey: entry.key,
        leaseOwner: entry.leaseOwner._tag === "Some" ? entry.leaseOwner.value : ""
      })
    )
    return encode(failed)
  })

/**
 * Whether the task's run is a durable one that did not end: another start
 * resumes it, so its entry records the task as it is, never FAILED. A store
 * that cannot tell says no, as before durable runs.
 */
const goesOn = (durable: DurableRuns | undefined, taskId: string, context: ServerCallContext) =>
  durable === undefined ? Effect.succeed(false) : Effect.map(
    Effect.orElseSucceed(durable.load({ ...internalAuthentication.scopeOf(context), taskId }), () => Option.none()),
    Option.isSome
  )

/**
 * The task as stored now, or a SUBMITTED placeholder when its replica has not saved it yet.
 *
 * @internal
 */
export const snapshot = (
  taskStore: TaskStore,
  taskId: string,
  context: ServerCallContext,
  message: Message
): Effect.Effect<Task> =>
  Effect.map(Effect.orDie(taskStore.get(taskId, context)), (task): Task =>
    task ?? {
      id: taskId,
      contextId: message.contextId,
      artifacts: [],
      history: [],
      metadata: {},
      status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: new Date().toISOString() }
    })

/** @internal */
export interface Prepared {
  readonly ref: IdempotencyLedger.EntryRef
  readonly outcome: IdempotencyLedger.BeginOutcome
}

/**
 * The refusal of a message to a task that runs: TaskNotFound when the task
 * is not the caller's to see, as for one that does not exist, since "still
 * running" would tell another caller that it does.
 */
const refusedAsRunning = (shared: Shared, taskId: string, context: ServerCallContext) =>
  Effect.flatMap(
    Effect.orElseSucceed(shared.taskStore.get(taskId, context), () => undefined),
    (task) =>
      Effect.fail(
        task === undefined ? new TaskNotFoundError(`Task not found: ${taskId}`) : stillRunning(taskId)
      )
  )

/**
 * The entry of a keyed request, begun or found; `undefined` for a request without a key.
 *
 * @internal
 */
export const begin = (
  shared: Shared,
  params: SendMessageRequest,
  context: ServerCallContext,
  kind: "send" | "stream"
) =>
  Effect.gen(function*() {
    const { ledger, unheld } = shared
    const message = params.message
    if (message === undefined) return undefined
    const key = yield* Effect.try({
      try: () => keyOf(message, internalHandler.headersOf(context)),
      catch: (error) => error as RequestMalformedError
    })
    if (key === undefined) return undefined
    const ref = { key, identity: identityOf(shared, context) }
    const request = {
      ...ref,
      fingerprint: fingerprintOf(message, kind),
      taskId: message.taskId || randomUUID(),
      lease: shared.lease
    }
    // A new key, not a repeat, to a task that runs: a second run would share its event bus. Refused
    // before anything is written, so that a repeat meanwhile is not joined to an entry about to go.
    const refused = unheld.has(context) && Option.isNone(yield* ledger.get(ref))
    if (refused) return yield* refusedAsRunning(shared, request.taskId, context)
    for (let attempt = 0; attempt < 3; attempt++) {
      const outcome = yield* ledger.begin(request)
      if (outcome._tag === "Started" && unheld.has(context)) {
        // Its entry went since the read (abandoned, cleaned up): a new key after all.
        yield* ledger.abandon({ ...ref, lease: outcome.lease })
        return yield* refusedAsRunning(shared, request.taskId, context)
      }
      if (outcome._tag !== "Interrupted") return { ref, outcome } satisfies Prepared
      // Record it FAILED now rather than at the next sweep, then read it back.
      yield* ledger.expireLease({ ...ref, onExpired: shared.onExpired })
    }
    return yield* Effect.dieMessage("idempotency entry stayed interrupted")
  }).pipe(
    Effect.catchTag("IdempotencyConflict", () => Effect.fail(new RequestMalformedError(conflictText))),
    // A key (with its tenant and user name) no ledger can keep: the caller's mistake, not an outage.
    Effect.catchIf(
      (error): error is IdempotencyLedger.IdempotencyError =>
        error instanceof IdempotencyError && error.reason === "InvalidKey",
      (error) => Effect.fail(new RequestMalformedError(`idempotency key: ${error.detail}`))
    )
  )

/**
 * Waits for a running entry; on time-out answers with the task as it is
 * now. `undefined` when the entry went meanwhile: its request was
 * refused before any run (its entry abandoned), so the key is free again.
 *
 * @internal
 */
export const join = (
  shared: Shared,
  prepared: Prepared,
  taskId: string,
  context: ServerCallContext,
  message: Message
): Effect.Effect<Task | Message | undefined, Failure> => {
  const { ledger, onExpired, taskStore } = shared
  return ledger.await({ ...prepared.ref, timeout: shared.wait }).pipe(
    Effect.flatMap((outcome) =>
      outcome._tag === "Finished"
        ? recordedNow(shared, outcome.result, context)
        : Effect.zipRight(
          ledger.expireLease({ ...prepared.ref, onExpired }),
          Effect.flatMap(ledger.await({ ...prepared.ref, timeout: "1 second" }), (again) =>
            again._tag === "Finished"
              ? recordedNow(shared, again.result, context)
              : snapshot(taskStore, taskId, context, message))
        )
    ),
    Effect.catchIf(
      (error) => error._tag === "IdempotencyError" && error.reason === "Timeout",
      () => snapshot(taskStore, taskId, context, message)
    ),
    Effect.catchIf(
      (error) => error._tag === "IdempotencyError" && error.reason === "NotFound",
      () => Effect.succeed(undefined)
    )
  )
}

/**
 * When this process's run of the task for the call ends, its events in the
 * store: its channel finishes (see `handler/channel.ts`). At once when it
 * runs none.
 *
 * @internal
 */
export const runEnded = (shared: Shared, taskId: string, context: ServerCallContext): Effect.Effect<void> =>
  Effect.async<void>((resume) => {
    const channel = shared.subscriptions.channels.get(taskId, context)
    if (channel === undefined) return resume(Effect.void)
    const unfollow = channel.follow({ event: () => {}, failed: () => {}, finished: () => resume(Effect.void) })
    return Effect.sync(unfollow)
  })

/** What a run stops at: a message, or a task in a final or paused state; never one still running. */
const endOf = <A extends Task | Message>(result: A | undefined): A | undefined =>
  result !== undefined && (!("status" in result) || taskState.isSettled((result as Task).status?.state))
    ? result
    : undefined

// How long a task is read again, once its run ended, while the store fails (a failover): the end
// it saved meanwhile is what the entry records. At most 5 s apart.
const readBack = Schedule.exponential("100 millis").pipe(
  Schedule.either(Schedule.spaced("5 seconds")),
  Schedule.upTo(Duration.seconds(10))
)

/**
 * After a run: finish the entry with its end as stored, or release it when
 * no run started. The entry never records a running task: a caller answered
 * at once (`returnImmediately`) or not at all got one, and its end is read
 * once the run ended; an end the store lost is recorded FAILED, and an end
 * that cannot be read is left to the lease sweep, which reads it later.
 *
 * @internal
 */
export const settle = (
  shared: Shared,
  prepared: Prepared,
  held: IdempotencyLedger.Lease,
  taskId: string,
  context: ServerCallContext,
  result: Task | Message | undefined
): Effect.Effect<void, IdempotencyLedger.IdempotencyError> =>
  Effect.gen(function*() {
    const { ledger, taskStore } = shared
    const ids = { taskId, idempotencyKey: prepared.ref.key }
    if (!shared.runContexts.has(context)) {
      yield* ledger.abandon({ ...prepared.ref, lease: held })
      return
    }
    const record = (final: Task | Message) =>
      Effect.flatMap(ledger.finish({ ...prepared.ref, result: encode(final), lease: held }), (recorded) =>
        recorded
          ? Effect.void
          : Effect.logWarning("The idempotency entry was already recorded by another replica (lease lost)").pipe(
            Effect.annotateLogs(ids)
          ))
    const unreadable = (message: string, error: unknown) =>
      Effect.logWarning(message).pipe(
        Effect.annotateLogs({ ...ids, cause: internalCauses.renderCause(Cause.die(error)) })
      )
    const read = taskStore.get(taskId, context)
    const stored = yield* Effect.either(read)
    const storedEnd = Either.isRight(stored) ? endOf(stored.right) : undefined
    if (storedEnd !== undefined) return yield* record(storedEnd)
    const resultEnd = endOf(result)
    if (resultEnd !== undefined) {
      if (Either.isLeft(stored)) {
        yield* unreadable("Could not read the task back to record its end; recording the run's result", stored.left)
      }
      return yield* record(resultEnd)
    }
    // The run may go on (its caller was answered at once, or not at all: the handler gave up when its
    // store refused a save), and it writes its end itself if the handler did not: read after the run.
    const after = yield* ledger.withLease(
      { ...prepared.ref, lease: held, duration: shared.lease },
      Effect.zipRight(runEnded(shared, taskId, context), Effect.either(Effect.retry(read, readBack)))
    )
    if (Either.isLeft(after)) {
      // Its end may be saved: left to the sweep, which records what the store then holds, once the lease lapses.
      return yield* unreadable(
        "Could not read the task back after its run ended; its idempotency entry is left to the lease sweep",
        after.left
      )
    }
    const afterEnd = endOf(after.right)
    if (afterEnd !== undefined) return yield* record(afterEnd)
    const kept = after.right
    // Left by a stop to be resumed: a repeat gets the task, which goes on.
    if (kept !== undefined && (yield* goesOn(shared.durable, taskId, context))) return yield* record(kept)
    // The run ended, but the store holds no end of it (it refused the task, or its final state): the
    // entry records it FAILED, so that a repeat neither runs its side effects again nor sees it running.
    const { errorId, task } = failedTask(
      taskId,
      kept?.contextId || shared.runContexts.get(context) || randomUUID(),
      kept
    )
    const saved = yield* Effect.orElseSucceed(Effect.as(saveWhole(taskStore, task, context), true), () => false)
    yield* Effect.logError("The run's end could not be stored; its idempotency entry records it FAILED").pipe(
      Effect.annotateLogs({
        ...ids,
        errorId,
        storedState: kept === undefined ? "none" : taskState.name(kept.status?.state),
        savedToStore: String(saved)
      })
    )
    yield* record(task)
  })
