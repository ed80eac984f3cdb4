/**
 * The event log on PostgreSQL, one log for every replica of a server.
 *
 * - An entry is a row of `effect_a2a_task_events` (task id, seq, the event's
 *   JSON text, when): its primary key makes a seq taken twice a conflict.
 *   The rows and the wake-ups of the other replicas are one statement
 *   (`pg_notify` of the task id and seq), so a wake-up is sent exactly when
 *   a row is written.
 * - A small event rides in its notification, sealed and signed with keys
 *   derived from the one kept in `effect_a2a_event_log_key`, so a replica
 *   following the task hands it on without reading the log. Any role that
 *   can connect to the database may listen and notify on any channel: it
 *   learns nothing of a sealed event, and an unsigned or wrongly signed
 *   notification is only a reason to read the log. Reading or forging an
 *   event takes the key, which only roles that can read that table have.
 *   Kept for the figure (issue #43 §5, measured again on our own request
 *   handler, `bench/replication.ts` with `BENCH_REPL_CARRY=1`): the read it
 *   spares is the larger part of a replica's latency, more so on a loaded
 *   machine (p50 0.52 to 0.72 times the latency without it, four runs).
 * - Appends are queued per task and written in order, those queued together
 *   in one statement, each retried with backoff until the log closes, so a
 *   restart of the database delays them and loses none.
 * - Wake-ups arrive on one LISTEN connection of our own
 *   (`store/pgListen.ts`), on one channel, and are split here by task id.
 *   Once it is back after a loss, every follower reads the log again: a
 *   notification sent while it was down is lost.
 * - A poll of the followed tasks' last seq (1 s by default) is the backstop:
 *   a lost notification only delays an event.
 * - A finished task is a row of `effect_a2a_task_event_ends`; a sweep
 *   deletes its entries `retention` after. A task never finished keeps its
 *   entries.
 *
 * @internal
 */
import * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberId from "effect/FiberId"
import * as FiberSet from "effect/FiberSet"
import * as Runtime from "effect/Runtime"
import * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"
import type { Kysely } from "kysely"
import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes, timingSafeEqual } from "node:crypto"
import * as internalPgListen from "../store/pgListen.js"
import * as internalTaskStore from "../store/taskStore.js"
import * as internalEventLog from "./eventLog.js"

/** The table of entries. */
export const table = "effect_a2a_task_events"
/** The table of finished tasks, for retention. */
export const endsTable = "effect_a2a_task_event_ends"
/** The table of the key that seals and signs the events notifications carry: one row, readable by the replicas alone. */
export const keyTable = "effect_a2a_event_log_key"
export const defaultChannel = "effect_a2a_task_events"
/** The `application_name` of the LISTEN connection, as `pg_stat_activity` shows it. */
export const defaultApplicationName = "effect-a2a-event-log"

/** @internal */
export interface Options extends internalEventLog.Options {
  readonly url: string
  /** The NOTIFY channel the replicas share; `effect_a2a_task_events` by default. */
  readonly channel?: string | undefined
  /** How often the followed tasks are polled, in case a notification was lost; 1 s by default. */
  readonly pollInterval?: Duration.DurationInput | undefined
  /** Connections of the query pool; 10 by default. */
  readonly poolSize?: number | undefined
  /**
   * Whether to hold a LISTEN connection (true by default). Without one,
   * followers learn of new entries by the poll alone: behind a pooler that
   * keeps no session (PgBouncer in transaction mode), where LISTEN cannot work.
   */
  readonly listen?: boolean | undefined
  /** The `application_name` of the LISTEN connection (one the URL names wins). */
  readonly applicationName?: string | undefined
  /** Whether small events ride in their notifications, sealed and signed, and such ones are handed on (true by default). */
  readonly carry?: boolean | undefined
}

const messageOf = (error: unknown): string => error instanceof Error ? error.message : String(error)

const unavailable = (what: string) => (error: unknown) =>
  new internalEventLog.EventLogError({ reason: "Unavailable", message: `${what}: ${messageOf(error)}` })

// PostgreSQL's SQLSTATE of a refused statement; a lost connection has none (or a Node code such as ECONNRESET).
const sqlState = (error: unknown): string | undefined => {
  const code = typeof error === "object" && error !== null ? (error as { readonly code?: unknown }).code : undefined
  return typeof code === "string" && /^[0-9A-Z]{5}$/.test(code) ? code : undefined
}

// A statement refused for its data (class 22) or a constraint (class 23) is refused again: retrying it would hold
// the task's queue forever. Anything else (a lost connection, a restart, a shutdown) passes with time.
const isPermanent = (error: unknown): boolean => {
  const code = sqlState(error)
  return code !== undefined && (code.startsWith("22") || code.startsWith("23"))
}

// PostgreSQL's refusal of a commit whose notifications its NOTIFY queue has no room for: told by the routine that
// raises it, as the message is in the server's language (and 54000 is every "program limit exceeded").
const isQueueFull = (error: unknown): boolean =>
  sqlState(error) === "54000" && (error as { readonly routine?: unknown }).routine === "PreCommit_Notify"

// A notification's payload: `<seq>:<task id>`, or `<seq>` alone for a task id too long for a payload (8 000
// bytes), which wakes every follower. A nudge is `nudge:<task id>`. An event small enough rides in it, sealed then
// signed: `e<mac>:<seq>:<task id's length>:<task id><iv><event's JSON text, encrypted>`, the mac over all that follows
// it. Any role that can connect may LISTEN (it takes no privilege), so the event is never there in clear.
const nudgePrefix = "nudge:"
const carriedPrefix = "e"
// The most bytes of a payload that carries its event: every replica receives every notification, following the
// task or not, so a larger event is read from the log by the replicas that follow it.
const carriedBytes = 2_000

/** The keys of carried events, derived from the log's key: one signs, one seals (AES-256-CTR). @internal */
export interface Keys {
  readonly sign: Buffer
  readonly seal: Buffer
}
/** @internal */
export const keysOf = (key: Buffer): Keys => ({
  sign: Buffer.from(hkdfSync("sha256", key, "", "effect-a2a event log: sign", 32)),
  seal: Buffer.from(hkdfSync("sha256", key, "", "effect-a2a event log: seal", 32))
})

// HMAC-SHA256 cut to 128 bits, in base64url: 22 characters; an iv is as long.
const macOf = (keys: Keys, body: string): string =>
  createHmac("sha256", keys.sign).update(body).digest().subarray(0, 16).toString("base64url")
const seal = (keys: Keys, text: string): string => {
  const iv = randomBytes(16)
  const cipher = createCipheriv("aes-256-ctr", keys.seal, iv)
  return iv.toString("base64url") + Buffer.concat([cipher.update(text, "utf8"), cipher.final()]).toString("base64url")
}
// Only what the mac proved written by a replica: its iv is 16 bytes.
const unseal = (keys: Keys, sealed: string): string => {
  const decipher = createDecipheriv("aes-256-ctr", keys.seal, Buffer.from(sealed.slice(0, 22), "base64url"))
  return Buffer.concat([decipher.update(Buffer.from(sealed.slice(22), "base64url")), decipher.final()]).toString("utf8")
}
const carried = /^e([\w-]{22}):((\d{1,16}):(\d{1,4}):)/

const wakeUpOf = (taskId: string, seq: number): string =>
  Buffer.byteLength(taskId) <= 7_900 ? `${seq}:${taskId}` : `${seq}`

/** The payload of a row's notification: the row, sealed and signed with `keys`, when small enough. @internal */
export const payloadOf = (keys: Keys, taskId: string, row: internalEventLog.Row): string => {
  // One too large to ride whatever its task id is not sealed at all: an event may be megabytes.
  if (row.text.length > carriedBytes) return wakeUpOf(taskId, row.seq)
  const body = `${row.seq}:${taskId.length}:${taskId}${seal(keys, row.text)}`
  const signed = `${carriedPrefix}${macOf(keys, body)}:${body}`
  return Buffer.byteLength(signed) <= carriedBytes ? signed : wakeUpOf(taskId, row.seq)
}

// The most rows of one task written in one statement.
const maxBatch = 200

// How long rows are written without wake-ups once the NOTIFY queue was found full.
const quietAfterFullQueue = Duration.seconds(10)

/**
 * The log in the database `options.url` names: its tables created when
 * missing, a pool of connections for queries, and the LISTEN connection;
 * all close with the scope. Appends still queued then are given up, each
 * task's logged: flush first to keep them.
 *
 * @internal
 */
export const makePg = (
  options: Options
): Effect.Effect<internalEventLog.EventLog, internalEventLog.EventLogError, Scope.Scope> =>
  Effect.gen(function*() {
    const channel = options.channel ?? defaultChannel
    const channelProblem = internalPgListen.channelProblem(channel)
    if (channelProblem !== undefined) {
      return yield* new internalEventLog.EventLogError({
        reason: "Unavailable",
        message: `The channel of the event log ${channelProblem}`
      })
    }
    const retention = Duration.decode(options.retention ?? internalEventLog.defaultRetention)
    const pollInterval = Duration.decode(options.pollInterval ?? Duration.seconds(1))
    const unavailableAfter = Duration.decode(options.unavailableAfter ?? internalEventLog.defaultUnavailableAfter)
    const runFork = Runtime.runFork(yield* Effect.runtime<never>())
    const carry = options.carry ?? true

    const { db, driver: pg, sql } = yield* internalTaskStore.connection(
      { _tag: "Postgres", url: options.url, poolSize: options.poolSize },
      "event log",
      () => Effect.void,
      internalTaskStore.replicationUse
    ).pipe(Effect.mapError((failure) =>
      new internalEventLog.EventLogError({
        reason: failure.reason === "MissingPackage" ? "MissingPackage" : "Unavailable",
        message: failure.message
      })
    ))
    const t = sql.table(table)
    const ends = sql.table(endsTable)
    const keys = sql.table(keyTable)
    const query = <A>(what: string, run: (db: Kysely<unknown>) => Promise<A>) =>
      Effect.tryPromise({ try: () => run(db), catch: unavailable(what) })

    const carriedKeys = yield* query("Could not create the tables of the event log", (db) =>
      internalTaskStore.exclusivelyPg(db, sql, table, async (trx) => {
        await sql`create table if not exists ${t} (
          task_id text not null,
          seq bigint not null,
          event text not null,
          created_at bigint not null,
          primary key (task_id, seq)
        )`.execute(trx)
        await sql`create table if not exists ${ends} (
          task_id text primary key,
          finished_at bigint not null
        )`.execute(trx)
        await sql`create index if not exists ${sql.id(`${endsTable}_finished_at`)} on ${ends} (finished_at)`
          .execute(trx)
        // The first replica's key is every replica's.
        await sql`create table if not exists ${keys} (id smallint primary key, key text not null)`.execute(trx)
        await sql`insert into ${keys} (id, key) values (1, ${randomBytes(32).toString("base64")})
          on conflict (id) do nothing`.execute(trx)
        const result = await sql<{ readonly key: string }>`select key from ${keys} where id = 1`.execute(trx)
        // eslint-disable-next-line @typescript-eslint/no-non-null-assertion -- the row was inserted above, in this transaction
        return keysOf(Buffer.from(result.rows[0]!.key, "base64"))
      }))

    const read = (taskId: string, after: number, limit: number | undefined) =>
      query("Could not read the event log", (db) =>
        sql<{ readonly seq: string | number; readonly event: string }>`select seq, event from ${t}
          where task_id = ${taskId} and seq > ${after} order by seq ${
          limit === undefined ? sql`` : sql`limit ${limit}`
        }`
          .execute(db)).pipe(
          Effect.map((result) =>
            result.rows.map((row): internalEventLog.Row => ({ seq: Number(row.seq), text: row.event }))
          )
        )

    // Every replica sweeps; a round that fails is logged, and the next deletes what it missed.
    const retentionMillis = Duration.toMillis(retention)
    const sweep = Effect.flatMap(Clock.currentTimeMillis, (now) =>
      query("Could not delete the entries of finished tasks past retention from the event log", (db) =>
        sql`with gone as (delete from ${ends} where finished_at <= ${now - retentionMillis} returning task_id)
          delete from ${t} where task_id in (select task_id from gone)`.execute(db))).pipe(
        Effect.catchAll((error) =>
          Effect.logWarning(error.message)
        )
      )
    yield* Effect.forkScoped(Effect.repeat(sweep, Schedule.spaced(internalEventLog.sweepEvery(retention))))

    // -- Wake-ups: the LISTEN connection and the poll.
    const wakeups = internalEventLog.makeWakeups()
    // Nudges (`nudge:<task id>`) name no entry: they wake the task's nudge watchers alone.
    const nudged = internalEventLog.makeWakeups()
    let unreachableSince: number | undefined
    const tails = yield* internalEventLog.makeTails({
      read,
      wakeups,
      unavailableAfter,
      unreachableSince: () =>
        unreachableSince
    })
    // The last seq of each task's statement in flight here. Its own notifications need not wake the task's reader:
    // the statement's end hands its rows to the followers here, or wakes the reader when it cannot. (One that
    // carries its event is handed on as it comes: it comes before the statement's end.)
    const writing = new Map<string, number>()
    let forgeryLogged = false
    // A carried event is handed on when its task is followed here and the row is new to it, and only if signed with
    // the key; wrongly signed, it is a wake-up, and the reader reads what the log really holds.
    const receive = (payload: string) => {
      const match = carried.exec(payload)
      if (match === null) {
        return wakeups.signalAll()
      }
      const [head, mac = "", , seqText, lengthText] = match
      const seq = Number(seqText)
      const taskId = payload.slice(head.length, head.length + Number(lengthText))
      if (!tails.behind(taskId, seq)) {
        return
      }
      if (!carry) {
        return wakeups.signal(taskId)
      }
      const body = payload.slice(mac.length + 2)
      if (!timingSafeEqual(Buffer.from(mac), Buffer.from(macOf(carriedKeys, body)))) {
        if (!forgeryLogged) {
          forgeryLogged = true
          runFork(
            Effect.logWarning(
              "A notification on the event log's channel carried an event not signed with the log's key: ignored, the log read instead (further ones are not logged)"
            ).pipe(Effect.annotateLogs({ taskId, seq }))
          )
        }
        return wakeups.signal(taskId)
      }
      if (!tails.offer(taskId, { seq, text: unseal(carriedKeys, payload.slice(head.length + taskId.length)) })) {
        wakeups.signal(taskId)
      }
    }
    const dispatch = (payload: string | undefined) => {
      if (payload?.startsWith(nudgePrefix) === true) {
        return nudged.signal(payload.slice(nudgePrefix.length))
      }
      if (payload?.startsWith(carriedPrefix) === true) {
        return receive(payload)
      }
      const at = payload?.indexOf(":") ?? -1
      if (payload === undefined || at < 0) {
        return wakeups.signalAll()
      }
      const seq = Number(payload.slice(0, at))
      const taskId = payload.slice(at + 1)
      if (!Number.isSafeInteger(seq) || (seq > (writing.get(taskId) ?? 0) && tails.behind(taskId, seq))) {
        wakeups.signal(taskId)
      }
    }

    // The last seq of each followed task: one its reader has not reached wakes it.
    const poll = Effect.suspend(() => {
      const followed = wakeups.followed()
      if (followed.length === 0) {
        return Effect.sync(() =>
          void (unreachableSince = undefined)
        )
      }
      return query("Could not poll the event log", (db) =>
        sql<{ readonly task_id: string; readonly seq: string | number }>`select task_id, max(seq) as seq from ${t}
          where task_id = any(${followed}) group by task_id`.execute(db)).pipe(
          Effect.matchEffect({
            onFailure: () =>
              Effect.flatMap(Clock.currentTimeMillis, (now) =>
                Effect.sync(() =>
                  void (unreachableSince ??= now)
                )),
            onSuccess: (result) =>
              Effect.sync(() => {
                unreachableSince = undefined
                for (const row of result.rows) {
                  if (tails.behind(row.task_id, Number(row.seq))) {
                    wakeups.signal(row.task_id)
                  }
                }
              })
          })
        )
    })
    yield* Effect.forkScoped(Effect.repeat(poll, Schedule.spaced(pollInterval)))

    if (options.listen ?? true) {
      yield* internalPgListen.listen({
        url: options.url,
        channel,
        applicationName: options.applicationName ?? defaultApplicationName,
        driver: pg,
        who: "The event log",
        whenBack: "its followers read the log again",
        notified: dispatch,
        reconnected: wakeups.signalAll
      }).pipe(Effect.mapError(unavailable("Could not listen to the event log's channel")))
    }

    // -- Appends: a queue per task, written in order.
    // An event's row, or (no row) the task's end.
    interface Op {
      readonly row: internalEventLog.Row | undefined
      readonly done: Deferred.Deferred<void>
    }
    const queues = new Map<string, Array<Op>>()
    let closed = false
    const fork = yield* FiberSet.makeRuntime<never>()

    const drain = (taskId: string, queue: Array<Op>) =>
      Effect.gen(function*() {
        while (queue.length > 0) {
          // The rows queued in a row go in one statement, and one commit.
          const batch: Array<internalEventLog.Row> = []
          for (const op of queue) {
            if (batch.length === maxBatch || op.row === undefined) {
              break
            }
            batch.push(op.row)
          }
          const rows = batch.length
          yield* rows === 0 ? writeEnd(taskId) : writeRows(taskId, batch)
          queue.splice(0, Math.max(rows, 1)).forEach((op) =>
            Deferred.unsafeDone(op.done, Exit.void)
          )
        }
        queues.delete(taskId)
      }).pipe(
        Effect.onInterrupt(() =>
          Effect.suspend(() => {
            queues.delete(taskId)
            const left = queue.splice(0)
            left.forEach((op) =>
              Deferred.unsafeDone(op.done, Exit.void)
            )
            const seqs = left.flatMap((op) => op.row === undefined ? [] : [op.row.seq])
            return seqs.length === 0 ? Effect.void : Effect.logError(
              `${seqs.length} events of a task were not written to the event log: it closed first`
            ).pipe(Effect.annotateLogs({ taskId, seqs: seqs.join(",") }))
          })
        )
      )

    const enqueue = (taskId: string, row: internalEventLog.Row | undefined) => {
      if (closed) {
        if (row !== undefined) {
          runFork(
            Effect.logError("An event was not written to the event log: it is closed").pipe(
              Effect.annotateLogs({ taskId, seq: row.seq })
            )
          )
        }
        return
      }
      const op: Op = { row, done: Deferred.unsafeMake<void>(FiberId.none) }
      const queue = queues.get(taskId)
      if (queue !== undefined) {
        queue.push(op)
        return
      }
      const fresh = [op]
      queues.set(taskId, fresh)
      fork(drain(taskId, fresh))
    }

    // A statement retried until it is written; logged once when it first fails and once when it is written after
    // all, given up when it is refused for good: `refused` then, logged by default.
    const persist = (
      what: string,
      annotations: Record<string, unknown>,
      statement: (now: number) => (db: Kysely<unknown>) => Promise<unknown>,
      refused?: () => Effect.Effect<void>
    ): Effect.Effect<boolean> => {
      let failed = false
      return Effect.flatMap(Clock.currentTimeMillis, (now) =>
        Effect.tryPromise({
          try: () => statement(now)(db),
          catch: (error) => error
        })).pipe(
          Effect.tapError((error) =>
            failed || isPermanent(error) ? Effect.void : Effect.suspend(() => {
              failed = true
              return Effect.logWarning(`Could not write ${what} to the event log; retrying: ${messageOf(error)}`)
            })
          ),
          Effect.retry({ schedule: internalEventLog.backoff, while: (error) => !isPermanent(error) }),
          Effect.matchEffect({
            onSuccess: () =>
              Effect.as(failed ? Effect.logInfo(`Wrote ${what} to the event log after retries`) : Effect.void, true),
            onFailure: (error) =>
              Effect.as(
                refused !== undefined
                  ? refused()
                  : sqlState(error) === "23505"
                  ? internalEventLog.conflict(String(annotations["taskId"]), Number(annotations["seq"]))
                  : Effect.logError(`Could not write ${what} to the event log; given up: ${messageOf(error)}`),
                false
              )
          }),
          Effect.annotateLogs(annotations)
        )
    }

    // When PostgreSQL's NOTIFY queue was last found full. A listening session left in a transaction holds the queue
    // (any role may listen), and a full one refuses every statement that notifies: for a while after, rows are
    // written without their wake-ups rather than not at all, and the other replicas' poll finds them.
    let queueFull: number | undefined
    const quietMillis = Duration.toMillis(quietAfterFullQueue)

    // Rows of a task, each with its wake-up, in one statement; its followers here get them at once. A batch
    // refused for good (one row's seq taken) is written row by row, so that only that row is lost.
    const writeRows = (taskId: string, rows: ReadonlyArray<internalEventLog.Row>): Effect.Effect<void> => {
      const seqs = rows.map((row) => row.seq)
      return Effect.suspend(() => {
        const last = seqs.at(-1)
        if (last !== undefined) writing.set(taskId, last)
        return persist(
          rows.length === 1 ? "an event" : `${rows.length} events`,
          rows.length === 1 ? { taskId, seq: seqs[0] } : { taskId, seqs: seqs.join(",") },
          (now) => (db) => {
            const insert = sql`insert into ${t} (task_id, seq, event, created_at)
              select ${taskId}, r.seq, r.event, ${now} from unnest(${seqs}::bigint[], ${
              rows.map((row) => row.text)
            }::text[])
                as r(seq, event)`
            if (queueFull !== undefined && now - queueFull < quietMillis) return insert.execute(db)
            return sql`with written as (${insert} returning seq)
              select pg_notify(${channel}, n.payload) from (
                select n.payload from written join unnest(${seqs}::bigint[], ${
              rows.map((row) => carry ? payloadOf(carriedKeys, taskId, row) : wakeUpOf(taskId, row.seq))
            }::text[])
                  as n(seq, payload) using (seq) order by seq
              ) n`.execute(db).then((result) => {
              if (queueFull !== undefined) {
                queueFull = undefined
                runFork(
                  Effect.logInfo("PostgreSQL's NOTIFY queue takes notifications again: events wake the other replicas")
                )
              }
              return result
            }, (error: unknown) => {
              if (isQueueFull(error)) {
                if (queueFull === undefined) {
                  runFork(Effect.logWarning(
                    "PostgreSQL's NOTIFY queue is full (a session that listens is left in a transaction?): events are written without waking the other replicas, whose poll finds them"
                  ))
                }
                queueFull = now
              }
              throw error
            })
          },
          rows.length === 1
            ? undefined
            : () => Effect.forEach(rows, (row) => writeRows(taskId, [row]), { discard: true })
        )
      }).pipe(
        Effect.map((written) => {
          // Not written (maybe written all the same: the connection lost on commit), or past what the followers
          // here hold (after a gap): their reader finds out, as a notification would have woken it.
          if (!written || !rows.every((row) => tails.offer(taskId, row))) wakeups.signal(taskId)
        }),
        Effect.ensuring(Effect.sync(() => writing.delete(taskId)))
      )
    }
    const writeEnd = (taskId: string) =>
      Effect.asVoid(persist("the end of a task", { taskId }, (now) => (db) =>
        sql`insert into ${ends} (task_id, finished_at) values (${taskId}, ${now})
          on conflict (task_id) do update set finished_at = excluded.finished_at`.execute(db)))

    yield* Effect.addFinalizer(() =>
      Effect.sync(() => void (closed = true))
    )

    return {
      last: (taskId) =>
        query("Could not read the event log", (db) =>
          sql<{ readonly seq: string | number | null }>`select max(seq) as seq from ${t} where task_id = ${taskId}`
            .execute(db)).pipe(Effect.map((result) =>
              Number(result.rows[0]?.seq ?? 0)
            )),
      append: (taskId, seq, event) => {
        const text = internalEventLog.encode(runFork, taskId, seq, event)
        if (text !== undefined) enqueue(taskId, { seq, text })
      },
      flush: Effect.suspend(() =>
        Effect.forEach(queues.values(), (queue) => {
          const last = queue.at(-1)
          return last === undefined ? Effect.void : Deferred.await(last.done)
        }, { discard: true })
      ),
      follow: tails.follow,
      iterate: tails.iterate,
      read: (taskId, after) => Effect.flatMap(read(taskId, after, undefined), internalEventLog.decodeRows),
      nudge: (taskId) =>
        query(
          "Could not nudge the replicas",
          (db) => sql`select pg_notify(${channel}, ${nudgePrefix + taskId})`.execute(db)
        ).pipe(Effect.asVoid),
      nudges: nudged.watch,
      finish: (taskId) => enqueue(taskId, undefined)
    } satisfies internalEventLog.EventLog
  })
