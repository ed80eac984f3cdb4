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
 */
import { type AgentCard, type Message, Task as TaskCodec, Message as MessageCodec, type StreamResponse, type Task, TaskState } from "@a2a-js/sdk"
import { RequestMalformedError, UnsupportedOperationError } from "@a2a-js/sdk/errors"
import {
  type AgentExecutor as SdkAgentExecutor,
  DefaultRequestHandler,
  RequestContext,
  ServerCallContext,
  type TaskStore,
  UnauthenticatedUser,
  type User
} from "@a2a-js/sdk/server"
import type { SendMessageRequest } from "@a2a-js/sdk"
import { Cause, Deferred, Duration, Effect, Exit, Option, Runtime } from "effect"
import type * as Scope from "effect/Scope"
import { randomUUID } from "node:crypto"
import * as Idempotency from "../../Idempotency.js"
import * as IdempotencyLedger from "../../IdempotencyLedger.js"
import * as internalFailure from "./failure.js"
import * as internalParts from "./handler.js"
import * as internalRpc from "./rpc.js"
import * as ErrorId from "../wire/errorId.js"
import * as IdempotencyKey from "../wire/idempotencyKey.js"
import * as wireParts from "../wire/parts.js"
import * as taskState from "../wire/taskState.js"

/** @internal */
export type Headers = internalParts.RequestHeaders

/** @internal */
export interface Options {
  readonly identity?: ((headers: Headers, user: User | undefined) => IdempotencyLedger.Identity) | undefined
  readonly lease?: Duration.DurationInput | undefined
  readonly wait?: Duration.DurationInput | undefined
  readonly sweepEvery?: Duration.DurationInput | undefined
}

/** The text of a key sent twice with different values. */
export const keyMismatchText = "idempotency key differs between the Idempotency-Key header and the message metadata"

const conflictText = "idempotency key reused with a different request"

/** What is stored as the result of an entry: the JSON-RPC `SendMessage` result shape. */
type Stored = { readonly task: unknown } | { readonly message: unknown }


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
  return Idempotency.fingerprint({ kind, message: json })
}

/** The default identity: the A2A tenant and the authenticated user's name; anonymous otherwise. */
const defaultIdentity = (context: ServerCallContext): IdempotencyLedger.Identity => ({
  tenant: context.tenant ?? "",
  user: context.user?.isAuthenticated === true ? context.user.userName : ""
})

const decode = (stored: unknown): Task | Message => {
  if (typeof stored === "object" && stored !== null) {
    if ("task" in stored) return TaskCodec.fromJSON((stored as { task: unknown }).task)
    if ("message" in stored) return MessageCodec.fromJSON((stored as { message: unknown }).message)
  }
  throw new Error("idempotency ledger holds a result that is not a task or a message")
}

const encode = (result: Task | Message): Stored =>
  "status" in result ? { task: TaskCodec.toJSON(result) } : { message: MessageCodec.toJSON(result as Message) }

const toStreamResponse = (result: Task | Message): StreamResponse =>
  "status" in result
    ? { payload: { $case: "task", value: result } }
    : { payload: { $case: "message", value: result as Message } }

const turnEnds: ReadonlySet<TaskState | undefined> = new Set([
  TaskState.TASK_STATE_COMPLETED,
  TaskState.TASK_STATE_FAILED,
  TaskState.TASK_STATE_CANCELED,
  TaskState.TASK_STATE_REJECTED,
  TaskState.TASK_STATE_INPUT_REQUIRED,
  TaskState.TASK_STATE_AUTH_REQUIRED
])

/** Whether a stream event ends the turn: a final or interrupted state. */
const endsTurn = (event: StreamResponse): boolean => {
  const payload = event.payload
  if (payload?.$case === "statusUpdate") return turnEnds.has(payload.value.status?.state)
  if (payload?.$case === "task") return turnEnds.has(payload.value.status?.state)
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

/** @internal */
export interface Made {
  readonly handler: DefaultRequestHandler
}

/**
 * The SDK's request handler with idempotent sends, and the ledger sweep
 * forked in the current scope (the server's lifetime).
 *
 * @internal
 */
export const make = (deps: {
  readonly card: AgentCard
  readonly taskStore: TaskStore
  readonly executor: SdkAgentExecutor
  /** The handler's event buses, and what subscribes to them. */
  readonly subscriptions: internalRpc.Subscriptions
  /** Whether the call continues a task whose run was in progress here when it came: then only a repeat may join it. */
  readonly unheld: (context: ServerCallContext) => boolean
  readonly options: Options
}): Effect.Effect<DefaultRequestHandler, never, IdempotencyLedger.IdempotencyLedger | Scope.Scope> =>
  Effect.gen(function*() {
    const ledger = yield* IdempotencyLedger.IdempotencyLedger
    const runtime = yield* Effect.runtime<never>()
    const runPromiseExit = Runtime.runPromiseExit(runtime)
    // Rejects with the error itself, not a FiberFailure: the SDK's transports
    // map its own errors (e.g. -32602) by their class.
    const runPromise = <A, E>(effect: Effect.Effect<A, E>): Promise<A> =>
      runPromiseExit(effect).then((exit) => {
        if (Exit.isSuccess(exit)) return exit.value
        throw Cause.squash(exit.cause)
      })
    const runFork = Runtime.runFork(runtime)
    const { card, subscriptions, taskStore, executor, options, unheld } = deps
    const lease = options.lease ?? Duration.seconds(30)
    const wait = options.wait ?? Duration.seconds(30)
    const identityOf = (context: ServerCallContext) =>
      options.identity === undefined ? defaultIdentity(context) : options.identity(internalParts.headersOf(context), context.user)

    // The store is scoped by tenant and owner; the server's transport has no
    // authentication, so every request runs as the unauthenticated user.
    const storeContext = (tenant: string) =>
      new ServerCallContext({ user: new UnauthenticatedUser(), ...(tenant === "" ? {} : { tenant }) })

    /** The task ended FAILED under a new error id, with what is known of it. */
    const failedTask = (taskId: string, contextId: string, existing: Task | undefined) => {
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

    /** A replica stopped renewing its lease: record the task FAILED, reason interrupted. */
    const onExpired = (entry: IdempotencyLedger.Entry) =>
      Effect.gen(function*() {
        const context = storeContext(entry.identity.tenant)
        const existing = yield* Effect.tryPromise(() => taskStore.load(entry.taskId, context))
        // Its replica saved the end but died before recording it: keep that end.
        if (existing !== undefined && taskState.isSettled(existing.status?.state)) return encode(existing)
        const { errorId, task: failed } = failedTask(entry.taskId, existing?.contextId || randomUUID(), existing)
        yield* Effect.tryPromise(() => taskStore.save(failed, context))
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

    yield* Effect.forkScoped(IdempotencyLedger.sweep({ onExpired, every: options.sweepEvery }))

    /** The task as stored now, or a SUBMITTED placeholder when its replica has not saved it yet. */
    const snapshot = (taskId: string, context: ServerCallContext, message: Message) =>
      Effect.map(Effect.promise(() => taskStore.load(taskId, context)), (task): Task =>
        task ?? {
          id: taskId,
          contextId: message.contextId,
          artifacts: [],
          history: [],
          metadata: {},
          status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: new Date().toISOString() }
        })

    interface Prepared {
      readonly ref: IdempotencyLedger.EntryRef
      readonly outcome: IdempotencyLedger.BeginOutcome
    }

    const begin = (params: SendMessageRequest, context: ServerCallContext, kind: "send" | "stream") =>
      Effect.gen(function*() {
        const message = params.message
        if (message === undefined) return undefined
        const key = keyOf(message, internalParts.headersOf(context))
        if (key === undefined) return undefined
        const ref = { key, identity: identityOf(context) }
        const request = {
          ...ref,
          fingerprint: fingerprintOf(message, kind),
          taskId: message.taskId || randomUUID(),
          lease
        }
        // A new key, not a repeat, to a task that runs: a second run would share its event bus. Refused
        // before anything is written, so that a repeat meanwhile is not joined to an entry about to go.
        const refused = unheld(context) && Option.isNone(yield* ledger.get(ref))
        if (refused) return yield* Effect.fail(internalRpc.stillRunning(request.taskId))
        for (let attempt = 0; attempt < 3; attempt++) {
          const outcome = yield* ledger.begin(request)
          if (outcome._tag === "Started" && unheld(context)) {
            // Its entry went since the read (abandoned, cleaned up): a new key after all.
            yield* ledger.abandon({ ...ref, lease: outcome.lease })
            return yield* Effect.fail(internalRpc.stillRunning(request.taskId))
          }
          if (outcome._tag !== "Interrupted") return { ref, outcome } satisfies Prepared
          // Record it FAILED now rather than at the next sweep, then read it back.
          yield* ledger.expireLease({ ...ref, onExpired })
        }
        return yield* Effect.dieMessage("idempotency entry stayed interrupted")
      }).pipe(
        Effect.catchTag("IdempotencyConflict", () => Effect.fail(new RequestMalformedError(conflictText))),
        // A key (with its tenant and user name) no ledger can keep: the caller's mistake, not an outage.
        Effect.catchIf(
          (error): error is IdempotencyLedger.IdempotencyError =>
            error instanceof IdempotencyLedger.IdempotencyError && error.reason === "InvalidKey",
          (error) => Effect.fail(new RequestMalformedError(`idempotency key: ${error.detail}`))
        )
      )

    /**
     * Waits for a running entry; on time-out answers with the task as it is
     * now. `undefined` when the entry went meanwhile: its request was
     * refused before any run (its entry abandoned), so the key is free again.
     */
    const join = (prepared: Prepared, taskId: string, context: ServerCallContext, message: Message) =>
      ledger.await({ ...prepared.ref, timeout: wait }).pipe(
        Effect.flatMap((outcome) =>
          outcome._tag === "Finished"
            ? Effect.sync(() => decode(outcome.result))
            : Effect.zipRight(
              ledger.expireLease({ ...prepared.ref, onExpired }),
              Effect.flatMap(ledger.await({ ...prepared.ref, timeout: "1 second" }), (again) =>
                again._tag === "Finished" ? Effect.sync(() => decode(again.result)) : snapshot(taskId, context, message))
            )
        ),
        Effect.catchIf(
          (error) => error._tag === "IdempotencyError" && error.reason === "Timeout",
          () => snapshot(taskId, context, message)
        ),
        Effect.catchIf((error) => error._tag === "IdempotencyError" && error.reason === "NotFound", () => Effect.succeed(undefined))
      )

    // A repeat whose joined entry went begins again, as if it came first; a few times at most, should
    // the entry it then finds go too, after which it gets the task as it is.
    const maxJoins = 3

    const assigned = new WeakMap<ServerCallContext, string>()
    // The context id the handler gave each request's run, for a task recorded without the store.
    const runContexts = new WeakMap<ServerCallContext, string>()

    // The runs of this process by task id: a send that returns immediately is
    // answered before its run ends, and its entry must record that end.
    const runs = new Map<string, Promise<void>>()
    // The calls that started a run: one refused before (a message to a task
    // that has ended) must not record that task as its result.
    const ran = new WeakSet<ServerCallContext>()
    const watchedExecutor: SdkAgentExecutor = {
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
    }
    const runEnded = (taskId: string) => Effect.promise(() => (runs.get(taskId) ?? Promise.resolve()).catch(() => undefined))

    class IdempotentRequestHandler extends DefaultRequestHandler {
      constructor() {
        super(card, taskStore, watchedExecutor, ...internalParts.handlerArguments(subscriptions.manager))
        // The SDK draws a task id when it builds the request context; the
        // ledger recorded one before, so the run gets that one. The method is
        // private in the SDK's types (1.3.0), hence the instance override.
        const self = this as unknown as {
          _createRequestContext: (request: SendMessageRequest, context: ServerCallContext) => Promise<RequestContext>
        }
        const original = self._createRequestContext.bind(this)
        self._createRequestContext = async (request, context) => {
          const built = await original(request, context)
          runContexts.set(context, built.contextId)
          const taskId = assigned.get(context)
          if (taskId === undefined || request.message?.taskId) return built
          assigned.delete(context)
          return new RequestContext(
            { ...built.request, message: { ...built.userMessage, taskId } },
            taskId,
            built.contextId,
            built.context,
            built.task,
            built.referenceTasks
          )
        }
      }

      /** After a run: finish the entry with the stored task, or release it when no run started. */
      private settle(
        prepared: Prepared,
        held: IdempotencyLedger.Lease,
        taskId: string,
        context: ServerCallContext,
        result: Task | Message | undefined
      ): Effect.Effect<void, IdempotencyLedger.IdempotencyError> {
        return Effect.gen(function*() {
          if (!ran.has(context)) {
            yield* ledger.abandon({ ...prepared.ref, lease: held })
            return
          }
          const read = Effect.promise(() =>
            taskStore.load(taskId, context).catch((error: unknown) =>
              // The entry then records what the run returned; say why.
              runPromise(
                Effect.logWarning("Could not read the task back to record its end; recording the run's result").pipe(
                  Effect.annotateLogs({ taskId, idempotencyKey: prepared.ref.key, cause: internalFailure.renderCause(Cause.die(error)) }),
                  Effect.as(undefined)
                )
              )
            )
          )
          let final = (yield* read) ?? result
          if (final === undefined) {
            // The handler gave up (its store refused a save), but the run may go on and write its end
            // itself once the store is back: that end is what the entry records, read after the run.
            yield* ledger.withLease({ ...prepared.ref, lease: held, duration: lease }, runEnded(taskId))
            final = yield* read
          }
          if (final === undefined) {
            // The run started, but no task of it can be read (its store refused it): the entry records it
            // FAILED, so that a repeat does not run its side effects again.
            const { errorId, task } = failedTask(taskId, runContexts.get(context) ?? randomUUID(), undefined)
            const saved = yield* Effect.promise(() => taskStore.save(task, context).then(() => true, () => false))
            yield* Effect.logError("The run's task could not be stored; its idempotency entry records it FAILED").pipe(
              Effect.annotateLogs({ errorId, taskId, idempotencyKey: prepared.ref.key, savedToStore: String(saved) })
            )
            final = task
          }
          const recorded = yield* ledger.finish({ ...prepared.ref, result: encode(final), lease: held })
          if (!recorded) {
            yield* Effect.logWarning("The idempotency entry was already recorded by another replica (lease lost)").pipe(
              Effect.annotateLogs({ taskId, idempotencyKey: prepared.ref.key })
            )
          }
        })
      }

      override sendMessage(params: SendMessageRequest, context: ServerCallContext): Promise<Message | Task> {
        const sendOnce = () => super.sendMessage(params, context)
        const stream = () => super.sendMessageStream(params, context)
        const self = this
        const keyedSend = (joins: number): Effect.Effect<Message | Task, unknown> => Effect.gen(function*() {
          const prepared = yield* begin(params, context, "send")
          if (prepared === undefined) return yield* Effect.promise(sendOnce)
          const message = params.message!
          const { outcome } = prepared
          switch (outcome._tag) {
            case "Finished":
              return decode(outcome.result)
            case "Running": {
              if (params.configuration?.returnImmediately === true) return yield* snapshot(outcome.taskId, context, message)
              const joined = yield* join(prepared, outcome.taskId, context, message)
              if (joined !== undefined) return joined
              return yield* joins < maxJoins ? keyedSend(joins + 1) : snapshot(outcome.taskId, context, message)
            }
            case "Started": {
              const taskId = outcome.taskId
              assigned.set(context, taskId)
              if (params.configuration?.returnImmediately === true && card.capabilities?.streaming === true) {
                // Runs on in the background: its end is what the entry records.
                const relay = self.drive(prepared, outcome.lease, taskId, context, stream)
                const first = yield* Effect.promise(() => relay.iterate().next())
                if (first.done !== true) {
                  const payload = first.value.payload
                  if (payload?.$case === "task" || payload?.$case === "message") return payload.value
                }
                return yield* snapshot(taskId, context, message)
              }
              if (params.configuration?.returnImmediately === true) {
                // Answered as soon as the SDK answers; the entry waits in the background for the run's end.
                const answered = yield* Deferred.make<Message | Task, unknown>()
                runFork(
                  ledger.withLease(
                    { ...prepared.ref, lease: outcome.lease, duration: lease },
                    Effect.tryPromise({ try: sendOnce, catch: (error) => error }).pipe(
                      Effect.exit,
                      Effect.tap((exit) => Deferred.done(answered, exit)),
                      Effect.flatMap((exit) => Effect.as(runEnded(taskId), Exit.getOrElse(exit, () => undefined)))
                    )
                  ).pipe(
                    Effect.onExit((exit) => Exit.isFailure(exit) ? Deferred.failCause(answered, exit.cause) : Effect.void),
                    Effect.flatMap((result) => self.settle(prepared, outcome.lease, taskId, context, result)),
                    Effect.catchAllCause((cause) => Effect.logWarning("idempotency entry could not be recorded", cause))
                  )
                )
                return yield* Deferred.await(answered)
              }
              const exit = yield* ledger.withLease(
                { ...prepared.ref, lease: outcome.lease, duration: lease },
                Effect.tryPromise({ try: sendOnce, catch: (error) => error })
              ).pipe(Effect.exit)
              const settling = self.settle(
                prepared,
                outcome.lease,
                taskId,
                context,
                exit._tag === "Success" ? exit.value : undefined
              ).pipe(Effect.catchAll((error) => Effect.logWarning("idempotency entry could not be recorded", error)))
              // A failed answer is not held back: the run may still be writing its end, which the entry then
              // records in the background (a repeat meanwhile joins the running entry).
              if (exit._tag === "Success") yield* settling
              else runFork(settling)
              return yield* exit
            }
          }
        })
        return runPromise(keyedSend(1))
      }

      /** Runs the stream in the background, to its end, whether or not anyone still reads it. */
      private drive(
        prepared: Prepared,
        held: IdempotencyLedger.Lease,
        taskId: string,
        context: ServerCallContext,
        stream: () => AsyncGenerator<StreamResponse, void, undefined>
      ): Relay<StreamResponse> {
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
        runFork(
          ledger.withLease({ ...prepared.ref, lease: held, duration: lease }, Effect.promise(consume)).pipe(
            Effect.flatMap((last) => this.settle(prepared, held, taskId, context, last)),
            Effect.catchAllCause((cause) => Effect.logWarning("idempotency entry could not be recorded", cause))
          )
        )
        return relay
      }

      override sendMessageStream(
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
        const prepared = await runPromise(begin(params, context, "stream"))
        if (prepared === undefined) {
          yield* super.sendMessageStream(params, context)
          return
        }
        const message = params.message!
        const { outcome } = prepared
        switch (outcome._tag) {
          case "Finished":
            yield toStreamResponse(decode(outcome.result))
            return
          case "Running": {
            // Run by this process: its events are followed as they come. Run
            // elsewhere, or ended meanwhile: its end is awaited.
            if (runs.has(outcome.taskId)) {
              // Followed like a subscription: a caller who leaves lets go of the bus at once.
              subscriptions.subscribing(context)
              try {
                for await (const event of super.resubscribe({ tenant: params.tenant, id: outcome.taskId }, context)) {
                  yield event
                  if (endsTurn(event)) return
                }
              } catch (error) {
                // The run ended between the check and the subscription (the
                // SDK refuses to subscribe to a finished task): awaited below.
                if (!(error instanceof UnsupportedOperationError)) throw error
              }
              // Its reader left: nobody waits for the end.
              if (subscriptions.closed(context)) return
            }
            const joined = await runPromise(join(prepared, outcome.taskId, context, message))
            if (joined === undefined && joins < maxJoins) {
              yield* this.keyedStream(params, context, joins + 1)
              return
            }
            yield toStreamResponse(joined ?? await runPromise(snapshot(outcome.taskId, context, message)))
            return
          }
          case "Started": {
            assigned.set(context, outcome.taskId)
            const relay = this.drive(prepared, outcome.lease, outcome.taskId, context, () => super.sendMessageStream(params, context))
            yield* relay.iterate()
          }
        }
      }
    }

    return new IdempotentRequestHandler()
  })
