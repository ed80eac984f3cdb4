/**
 * The push sender: each event of a task POSTed to every webhook configured
 * for it, in order, with retries, never holding up the run that emitted it.
 *
 * @internal
 */
import type { StreamResponse, Task, TaskPushNotificationConfig } from "@a2a-js/sdk"
import { V03PushNotificationSerializer } from "@a2a-js/sdk/compat/v0_3/server"
import {
  type PushNotificationSerializer,
  type PushNotificationStore,
  resolveUserScope,
  type ServerCallContext,
  type StoredPushNotificationConfig,
  V1PushNotificationSerializer
} from "@a2a-js/sdk/server"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberSet from "effect/FiberSet"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as Random from "effect/Random"
import * as Schedule from "effect/Schedule"
import * as ScheduleDecision from "effect/ScheduleDecision"
import * as ScheduleInterval from "effect/ScheduleInterval"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as SubscriptionRef from "effect/SubscriptionRef"
import type * as Tracer from "effect/Tracer"
import * as http from "node:http"
import * as https from "node:https"
import type * as net from "node:net"
import * as internalMetrics from "../../observability/metrics.js"
import * as internalTracing from "../../observability/tracing.js"
import * as ErrorId from "../../wire/errorId.js"
import { taskIdOf } from "../../wire/streamResponse.js"
import * as TaskState from "../../wire/taskState.js"
import * as internalAuthentication from "../caller/authentication.js"
import { headersOf } from "../caller/headers.js"
import type * as internalPushOutbox from "./pushOutbox.js"
import { type Agents, checkLiteral, post, PushDeliveryError } from "./pushPost.js"
import * as internalPushQueue from "./pushQueue.js"

/** @internal */
export interface Options {
  /** Where the configs of a task are loaded from, with the run's context. */
  readonly store: PushNotificationStore
  /** The metric tag. */
  readonly agent: string
  /** Per attempt; 10 seconds by default. */
  readonly timeout?: Duration.DurationInput | undefined
  /** Per delivery, the first included; 8 by default. */
  readonly maxAttempts?: number | undefined
  /** Total time per delivery, its retries included; 5 minutes by default. */
  readonly budget?: Duration.DurationInput | undefined
  /** The delay before the first retry, doubled (with jitter) for each further one; 1 second by default. */
  readonly backoff?: Duration.DurationInput | undefined
  /** Passed to `http(s).request`: an error whose `code` is `EPUSHTARGET` refuses the target, not retried. */
  readonly lookup?: net.LookupFunction | undefined
  /** Where pending deliveries are kept across restarts and shared by replicas; none keeps them in memory. */
  readonly outbox?: internalPushOutbox.Outbox | undefined
  /** How often the outbox is searched for deliveries nobody holds; 5 seconds by default. */
  readonly sweep?: Duration.DurationInput | undefined
  /** Per task (events whose configs are loading) and per task and config (deliveries): the most that wait; 1,000 by default. */
  readonly maxPending?: number | undefined
}

/** @internal */
export interface PushSender {
  /** Queues `event` of a task for every config of the task (loaded with `context`); never blocks, never throws. */
  readonly notify: (event: StreamResponse, context: ServerCallContext, task?: Task) => void
}

/**
 * The auth headers of a config, as the SDK's `DefaultPushNotificationSender`
 * builds them (its `_buildAuthHeaders` is private): `authentication` first,
 * else the token in its default header.
 *
 * @internal
 */
export const authHeaders = (config: TaskPushNotificationConfig): Record<string, string> => {
  if (config.authentication?.scheme && config.authentication?.credentials) {
    return { Authorization: `${config.authentication.scheme} ${config.authentication.credentials}` }
  }
  return config.token ? { "X-A2A-Notification-Token": config.token } : {}
}

const v1 = new V1PushNotificationSerializer()
// As the SDK's legacy-aware sender: by the wire version a config was registered over, v1.0 for any other.
const serializers: ReadonlyMap<string, PushNotificationSerializer> = new Map<string, PushNotificationSerializer>([
  ["1.0", v1],
  ["0.3", new V03PushNotificationSerializer()]
])

// Loaded as the SDK's sender loads them: a store without wire versions gives the triggering request's.
const loadConfigs = (
  store: PushNotificationStore,
  taskId: string,
  context: ServerCallContext
): Promise<Array<StoredPushNotificationConfig>> =>
  store.loadWithMetadata
    ? store.loadWithMetadata(taskId, context)
    : store.load(taskId, context).then((configs) =>
      configs.map((config) => ({ config, wireVersion: context.requestedVersion || "0.3" }))
    )

/** One event of a task serialized for one config: what every attempt sends. */
interface Delivery {
  readonly taskId: string
  readonly configId: string
  readonly url: string
  readonly contentType: string
  readonly body: string
  readonly auth: Readonly<Record<string, string>>
  readonly parent: Option.Option<Tracer.ExternalSpan>
}

/** A delivery in its lane. */
interface Pending {
  readonly delivery: Delivery
  /** A status update, which a later one makes moot unless it is final itself. */
  readonly status: internalPushQueue.Status
  /** Its outbox row, when it has one. */
  readonly row: number | undefined
  /** Attempts made before, by this server or one before it. */
  readonly attempts: number
  /** When its time budget started. */
  readonly since: number
}

const statusOf = (event: StreamResponse): internalPushQueue.Status =>
  event.payload?.$case === "statusUpdate"
    ? TaskState.isTerminal(event.payload.value.status?.state) ? "final" : "running"
    : "none"

/**
 * Exponential backoff from `backoff` with jitter (×0.8 to ×1.2), at least a
 * 429's `Retry-After`; done after `maxAttempts` attempts, for an error no
 * retry can change, or when the next attempt would start past `deadline`.
 */
const retrySchedule = (
  backoffMillis: number,
  maxAttempts: number,
  deadline: number,
  retriesBefore: number
): Schedule.Schedule<readonly [retries: number, nextAt: number | undefined], PushDeliveryError> =>
  Schedule.makeWithState(
    retriesBefore,
    (now, error: PushDeliveryError, retries) =>
      Effect.map(Random.nextRange(0.8, 1.2), (jitter) => {
        const backoff = backoffMillis * 2 ** retries * jitter
        const delay = Math.max(backoff, error.retryAfter === undefined ? 0 : Duration.toMillis(error.retryAfter))
        const done = !error.retryable || retries + 1 >= maxAttempts || now + delay >= deadline
        return [
          retries + 1,
          [retries + 1, done ? undefined : now + delay] as const,
          done ? ScheduleDecision.done : ScheduleDecision.continueWith(ScheduleInterval.after(now + delay))
        ] as const
      })
  )

const hostOf = (url: string): { readonly url: URL | undefined; readonly host: string } => {
  try {
    const parsed = new URL(url)
    return { url: parsed, host: parsed.host }
  } catch {
    return { url: undefined, host: "" }
  }
}

/** @internal */
export const make = (options: Options): Effect.Effect<PushSender, never, Scope.Scope> =>
  Effect.gen(function*() {
    const timeoutMillis = Duration.toMillis(options.timeout ?? Duration.seconds(10))
    const maxAttempts = Math.max(1, options.maxAttempts ?? 8)
    const budgetMillis = Duration.toMillis(options.budget ?? Duration.minutes(5))
    const backoffMillis = Duration.toMillis(options.backoff ?? Duration.seconds(1))
    const sweepMillis = Duration.toMillis(options.sweep ?? Duration.seconds(5))
    const maxPending = Math.max(1, options.maxPending ?? 1_000)
    const tags = { agent: options.agent }
    const delivered = internalMetrics.tagged(internalMetrics.serverPushDelivered, tags)
    const retried = internalMetrics.tagged(internalMetrics.serverPushRetried, tags)
    const failed = internalMetrics.tagged(internalMetrics.serverPushFailed, tags)
    const refused = internalMetrics.tagged(internalMetrics.serverPushRefused, tags)

    // Released last: after the delivery fibers are stopped.
    const agents = yield* Effect.acquireRelease(
      Effect.sync((): Agents => ({
        http: new http.Agent({ keepAlive: true }),
        https: new https.Agent({ keepAlive: true })
      })),
      (agents) =>
        Effect.sync(() => {
          agents.http.destroy()
          agents.https.destroy()
        })
    )
    const run = yield* FiberSet.makeRuntime<never>()
    const inFlight = yield* SubscriptionRef.make(0)
    let closing = false
    // Runs before the fiber set interrupts what is left: no attempt starts any more, and those
    // in flight get up to one attempt's timeout to be answered.
    yield* Effect.addFinalizer(() =>
      Effect.suspend(() => {
        closing = true
        return inFlight.changes.pipe(
          Stream.filter((n) => n === 0),
          Stream.take(1),
          Stream.runDrain,
          Effect.timeoutOption(timeoutMillis)
        )
      })
    )

    const attempt = (url: URL, headers: Record<string, string | number>, body: string, deadline: number) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) =>
        closing
          ? Effect.interrupt
          : Effect.acquireUseRelease(
            SubscriptionRef.update(inFlight, (n) => n + 1),
            () => {
              const sent = post(
                agents,
                options.lookup,
                url,
                headers,
                body,
                Math.max(1, Math.min(timeoutMillis, deadline - now))
              )
              return options.lookup === undefined ? sent : Effect.zipRight(checkLiteral(options.lookup, url), sent)
            },
            () => SubscriptionRef.update(inFlight, (n) => n - 1)
          ))

    const outbox = options.outbox
    // The outbox rows this server holds in its lanes: a sweep does not take them in twice.
    const held = new Set<number>()
    // Delivered or given up: the rows go. One left behind is sent again by the next server.
    const forget = (rows: ReadonlyArray<number>): Effect.Effect<void> => {
      for (const row of rows) held.delete(row)
      return outbox === undefined || rows.length === 0 ? Effect.void : outbox.remove(rows).pipe(
        Effect.catchAll((error) =>
          Effect.logWarning("Could not delete delivered pushes from the outbox; they may be sent again").pipe(
            Effect.annotateLogs({ cause: String(error) })
          )
        )
      )
    }

    interface Report {
      readonly taskId: string
      /** None for an event dropped before its configs were loaded. */
      readonly configId?: string | undefined
      readonly host?: string | undefined
      readonly parent: Option.Option<Tracer.ExternalSpan>
      attempts: number
    }
    const where = (report: Report) => ({
      taskId: report.taskId,
      ...(report.configId === undefined ? {} : { configId: report.configId }),
      ...(report.host === undefined ? {} : { host: report.host })
    })
    // The metrics, give-up log line and span of one delivery. True when it is settled, delivered or given up;
    // false when the server's stop interrupted it.
    const reported = (report: Report, sending: Effect.Effect<void, PushDeliveryError>): Effect.Effect<boolean> =>
      sending.pipe(
        Effect.tapBoth({
          onSuccess: () => Metric.increment(delivered),
          onFailure: (error) =>
            Effect.zipRight(
              Metric.increment(error.reason === "Refused" ? refused : failed),
              Effect.logWarning(`Push delivery given up after ${report.attempts} attempt(s): ${error.message}`).pipe(
                Effect.annotateLogs({ ...where(report), errorId: ErrorId.make(), reason: error.reason })
              )
            )
        }),
        Effect.withSpan(internalTracing.pushSpanName, {
          kind: "client",
          attributes: {
            "a2a.task_id": report.taskId,
            ...(report.configId === undefined ? {} : { "a2a.push.config_id": report.configId }),
            ...(report.host === undefined ? {} : { "server.address": report.host })
          },
          ...(Option.isSome(report.parent) ? { parent: report.parent.value } : { root: true })
        }),
        // A give-up is logged above, a stop is no failure; anything else is a bug, not to end the lane.
        Effect.matchCauseEffect({
          onSuccess: () => Effect.succeed(true),
          onFailure: (cause) =>
            Cause.isInterruptedOnly(cause)
              ? Effect.succeed(false)
              : Cause.isDie(cause)
              ? Effect.as(
                Effect.logError("Push delivery failed unexpectedly", cause).pipe(
                  Effect.annotateLogs({ taskId: report.taskId })
                ),
                true
              )
              : Effect.succeed(true)
        })
      )

    // Dropped unsent past `maxPending`: counted failed and logged as a give-up.
    const overflowed = (reports: ReadonlyArray<Report>): Effect.Effect<void> =>
      Effect.forEach(reports, (report) => reported(report, new PushDeliveryError({ reason: "Overflow" })), {
        discard: true
      })

    const reportOf = (pending: Pending): Report => ({
      ...pending.delivery,
      host: hostOf(pending.delivery.url).host,
      attempts: pending.attempts
    })

    const deliver = (pending: Pending): Effect.Effect<void> => {
      const { delivery, row } = pending
      const target = hostOf(delivery.url)
      const report = reportOf(pending)
      // Each failed attempt, and when the next is due, so that a server taking the row up goes on from there.
      const record = ([attempts, nextAt]: readonly [number, number | undefined]) =>
        outbox === undefined || row === undefined || nextAt === undefined
          ? Effect.void
          : Effect.ignore(outbox.attempted(row, attempts, nextAt))
      const sending = Effect.gen(function*() {
        const url = target.url
        if (url === undefined || (url.protocol !== "http:" && url.protocol !== "https:")) {
          return yield* new PushDeliveryError({ reason: "InvalidTarget" })
        }
        const headers = {
          "Content-Type": delivery.contentType,
          "Content-Length": Buffer.byteLength(delivery.body),
          ...delivery.auth
        }
        const deadline = pending.since + budgetMillis
        yield* Effect.suspend(() => {
          report.attempts += 1
          const sent = attempt(url, headers, delivery.body, deadline)
          return report.attempts > 1 ? Effect.zipRight(Metric.increment(retried), sent) : sent
        }).pipe(
          Effect.retry(
            Schedule.tapOutput(retrySchedule(backoffMillis, maxAttempts, deadline, pending.attempts), record)
          )
        )
      })
      if (row === undefined) return Effect.asVoid(reported(report, sending))
      return Effect.uninterruptibleMask((restore) =>
        Effect.flatMap(Effect.exit(restore(reported(report, sending))), (exit) =>
          Exit.isSuccess(exit) && exit.value ? forget([row]) : Effect.void)
      )
    }

    // Per task and config: what waits behind the delivery in flight.
    const lane = internalPushQueue.make<Pending>({
      run,
      handle: deliver,
      maxPending,
      dropped: (dropped, overflow) => {
        const rows = dropped.flatMap((pending) =>
          pending.row === undefined ? [] : [pending.row]
        )
        return Effect.zipRight(overflow ? overflowed(dropped.map(reportOf)) : Effect.void, forget(rows))
      }
    })
    const enqueue = (pending: Pending): void => {
      if (pending.row !== undefined) held.add(pending.row)
      lane(`${pending.delivery.taskId}\u0000${pending.delivery.configId}`, pending)
    }

    /** `event` serialized for `stored`, as the SDK's sender would send it. */
    const prepare = (
      taskId: string,
      notified: Notified,
      stored: StoredPushNotificationConfig,
      parent: Option.Option<Tracer.ExternalSpan>
    ): Effect.Effect<void> => {
      const { config, wireVersion } = stored
      return Effect.try({
        try: () => (serializers.get(wireVersion) ?? v1).serialize(notified.event, notified.task),
        catch: () => new PushDeliveryError({ reason: "Unserializable" })
      }).pipe(
        Effect.flatMap((serialized) =>
          Effect.gen(function*() {
            const delivery: Delivery = {
              taskId,
              configId: config.id,
              url: config.url,
              contentType: serialized.contentType,
              body: serialized.body,
              auth: authHeaders(config),
              parent
            }
            const since = yield* Clock.currentTimeMillis
            // Written before the first attempt; a database that fails it leaves the delivery to this server alone.
            const added = outbox === undefined ? undefined : yield* outbox.add({
              tenant: notified.context.tenant ?? "",
              owner: resolveUserScope(notified.context),
              taskId,
              configId: config.id,
              url: delivery.url,
              contentType: delivery.contentType,
              body: delivery.body,
              headers: delivery.auth,
              traceparent: Option.getOrUndefined(Option.map(parent, internalTracing.traceparent)),
              createdAt: since
            }).pipe(
              Effect.catchAll((error) =>
                Effect.as(
                  Effect.logWarning("Could not write a push to the outbox; it is not kept across a restart").pipe(
                    Effect.annotateLogs({ taskId, configId: config.id, cause: String(error) })
                  ),
                  undefined
                )
              )
            )
            // Not held: a sweep sends it after the earlier rows of its task and config.
            if (added !== undefined && !added.held) return
            enqueue({ delivery, status: statusOf(notified.event), row: added?.id, attempts: 0, since })
          })
        ),
        Effect.catchAll((error) =>
          Effect.asVoid(
            reported(
              { taskId, configId: config.id, host: hostOf(config.url).host, parent, attempts: 0 },
              Effect.fail(error)
            )
          )
        )
      )
    }

    interface Notified {
      readonly event: StreamResponse
      readonly status: internalPushQueue.Status
      readonly context: ServerCallContext
      readonly task: Task | undefined
    }
    const parentOf = (notified: Notified) => internalTracing.parentOfHeaders(headersOf(notified.context))
    // Per task: events whose configs are still to be loaded, in order.
    const load = (next: Notified, taskId: string): Effect.Effect<void> =>
      Effect.tryPromise(() => loadConfigs(options.store, taskId, next.context)).pipe(
        Effect.matchEffect({
          onFailure: (error) =>
            Effect.logWarning("Push configs could not be loaded; the event is not pushed").pipe(
              Effect.annotateLogs({ taskId, errorId: ErrorId.make(), cause: String(error.cause) })
            ),
          onSuccess: (configs) => {
            const parent = parentOf(next)
            return Effect.forEach(configs, (stored) => prepare(taskId, next, stored, parent), { discard: true })
          }
        })
      )
    const queueEvent = internalPushQueue.make<Notified>({
      run,
      handle: load,
      maxPending,
      dropped: (dropped, overflow, taskId) =>
        overflow
          ? overflowed(dropped.map((notified) => ({ taskId, parent: parentOf(notified), attempts: 0 })))
          : Effect.void
    })

    // A row another server left, taken up unless its caller deleted the config since: the row keeps the tenant
    // and owner the configs are loaded by.
    const takeUp = (row: internalPushOutbox.Row): Effect.Effect<void> =>
      Effect.tryPromise(() =>
        loadConfigs(options.store, row.taskId, internalAuthentication.ownerContext(row.tenant, row.owner))
      ).pipe(
        Effect.map((configs) => configs.some((stored) => stored.config.id === row.configId)),
        // A store that cannot answer now loses no delivery.
        Effect.orElseSucceed(() => true),
        Effect.flatMap((kept) =>
          kept
            ? Effect.sync(() =>
              enqueue({
                delivery: {
                  taskId: row.taskId,
                  configId: row.configId,
                  url: row.url,
                  contentType: row.contentType,
                  body: row.body,
                  auth: row.headers,
                  parent: row.traceparent === undefined
                    ? Option.none()
                    : internalTracing.parentOfHeaders({ traceparent: row.traceparent })
                },
                status: "none",
                row: row.id,
                attempts: row.attempts,
                since: row.createdAt
              })
            )
            : forget([row.id])
        )
      )
    if (outbox !== undefined) {
      const sweep = Effect.suspend(() => closing ? Effect.succeed([]) : outbox.claim(100)).pipe(
        Effect.flatMap((rows) => Effect.forEach(rows.filter((row) => !held.has(row.id)), takeUp, { discard: true })),
        Effect.catchAll((error) =>
          Effect.logWarning("Could not take up the pushes waiting in the outbox").pipe(
            Effect.annotateLogs({ cause: String(error) })
          )
        )
      )
      run(Effect.repeat(sweep, Schedule.spaced(sweepMillis)))
    }

    return {
      notify: (event, context, task) => {
        try {
          if (closing) return
          const taskId = taskIdOf(event)
          if (taskId === undefined) return
          // The SDK's current task is a live reference the run keeps changing; a v0.3 body is made of it later.
          queueEvent(taskId, {
            event,
            status: statusOf(event),
            context,
            task: task === undefined ? undefined : structuredClone(task)
          })
        } catch {
          // Never thrown into the agent's run: nothing here can fail short of a bug.
        }
      }
    }
  })
