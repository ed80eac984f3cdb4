/**
 * One run per task across replicas: a run holds its task by a row in the
 * PostgreSQL the replicas share, with a lease its replica renews while it
 * runs. A message to a task another replica holds is refused; a replica
 * that dies stops renewing, and once its lease lapses any replica takes the
 * row and records the task FAILED (reason interrupted), or resumes its run
 * when it is durable. A replica that finds at a renewal that its row was
 * taken (it stalled past its lease) stops that run.
 *
 * @internal
 */
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as FiberId from "effect/FiberId"
import * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"
import { randomUUID } from "node:crypto"
import * as internalTaskStore from "../store/taskStore.js"

/** The claims table. @internal */
export const table = "effect_a2a_task_runs"

/** Who a held task belongs to, for the replica that records it FAILED after its owner died. @internal */
export interface Holder {
  readonly tenant: string
  /** The SDK's user scope of the task's caller (`resolveUserScope`). */
  readonly owner: string
}

/** A claim whose lease lapsed. @internal */
export interface Lapsed extends Holder {
  readonly taskId: string
  readonly replica: string
}

/** @internal */
export interface RunClaims {
  /** This replica's id, as its rows and log lines name it. */
  readonly replica: string
  /**
   * Holds the task for this replica, once more if it holds it already;
   * false when another replica's lease holds it.
   */
  readonly acquire: (taskId: string, holder: Holder) => Effect.Effect<boolean, unknown>
  /** Lets go of one hold; the row goes with the last. */
  readonly release: (taskId: string) => Effect.Effect<void>
  /**
   * Lets go of every hold of the task, its row kept but lapsed: the next
   * sweep, on any replica, finds it (a durable run left to resume).
   */
  readonly lapse: (taskId: string) => Effect.Effect<void>
}

/** @internal */
export interface Options {
  readonly url: string
  /** How long a claim lasts without renewal. Default 10 seconds. */
  readonly lease?: Duration.DurationInput | undefined
  /** How often lapsed claims are looked for. Default 2 seconds. */
  readonly sweep?: Duration.DurationInput | undefined
  /** What becomes of the task of a lapsed claim, taken by this replica alone. */
  readonly onLapsed: (lapsed: Lapsed) => Effect.Effect<void>
  /** What becomes of this replica's runs once it could not renew their claims for a whole lease. */
  readonly onLost: (taskIds: ReadonlyArray<string>) => Effect.Effect<void>
}

/** @internal */
export const make = (options: Options): Effect.Effect<RunClaims, internalTaskStore.Failure, Scope.Scope> =>
  Effect.gen(function*() {
    const { db, sql } = yield* internalTaskStore.connection(
      { _tag: "Postgres", url: options.url },
      "run claims",
      () => Effect.void,
      internalTaskStore.replicationUse
    )
    const t = sql.table(table)
    yield* Effect.tryPromise({
      try: () =>
        internalTaskStore.exclusivelyPg(db, sql, table, async (trx) => {
          await sql`create table if not exists ${t} (
            task_id text primary key,
            replica text not null,
            token text not null,
            lease_until bigint not null,
            tenant text not null,
            owner text not null
          )`.execute(trx)
        }),
      catch: internalTaskStore.fail("Migration", "Could not create the table of the run claims")
    })
    const replica = randomUUID()
    const leaseMillis = Duration.toMillis(options.lease ?? Duration.seconds(10))
    // Each hold's row is known by a token of its own: freeing an older row never deletes a newer one of the same task.
    const held = new Map<string, { count: number; readonly token: string }>()
    const acquiring = new Map<string, Deferred.Deferred<boolean, unknown>>()

    // Only the rows of the holds this replica has: a row whose delete failed lapses.
    let renewedAt = Date.now()
    const renew = Effect.suspend(() => {
      const tokens = Array.from(held.values(), (hold) => hold.token)
      const at = Date.now()
      return tokens.length === 0 ?
        Effect.sync(() => void (renewedAt = at)) :
        Effect.tryPromise(() =>
          // Not a row let lapse meanwhile (`lapse`): it stays lapsed for a sweep to find.
          sql<{ token: string }>`update ${t} set lease_until = ${at + leaseMillis}
            where token in (${sql.join(tokens)}) and lease_until > 0 returning token`.execute(db)
        ).pipe(Effect.flatMap((result) => {
          renewedAt = at
          // A row gone is a claim another replica swept, this one stalled past its lease: its run stops here.
          const renewed = new Set(result.rows.map((row) => row.token))
          const taken = Array.from(held).flatMap(([taskId, hold]) =>
            tokens.includes(hold.token) && !renewed.has(hold.token) ? [taskId] : []
          )
          if (taken.length === 0) return Effect.void
          for (const taskId of taken) held.delete(taskId)
          return Effect.zipRight(
            Effect.logError("This replica's run claims were taken by another replica: its runs stop").pipe(
              Effect.annotateLogs({ replica, tasks: taken.join(" ") })
            ),
            options.onLost(taken)
          )
        }))
    }).pipe(
      Effect.catchAll((error) => {
        const lost = Date.now() - renewedAt >= leaseMillis ? Array.from(held.keys()) : []
        // Another replica may have taken them by now: the runs stop rather than run twice.
        for (const taskId of lost) held.delete(taskId)
        return Effect.zipRight(
          lost.length === 0
            ? Effect.logWarning(
              "Could not renew this replica's run claims; another replica may take them when they lapse"
            )
              .pipe(Effect.annotateLogs({ replica, cause: String(error.error) }))
            : Effect.logError("This replica's run claims lapsed unrenewed: its runs stop, ending FAILED").pipe(
              Effect.annotateLogs({ replica, tasks: lost.join(" "), cause: String(error.error) })
            ),
          lost.length === 0 ? Effect.void : options.onLost(lost)
        )
      })
    )
    yield* Effect.forkScoped(Effect.repeat(renew, Schedule.spaced(Duration.millis(leaseMillis / 3))))

    const sweep = Effect.tryPromise(() =>
      sql<{ task_id: string; replica: string; tenant: string; owner: string }>`delete from ${t}
        where lease_until < ${Date.now()} returning task_id, replica, tenant, owner`.execute(db)
    ).pipe(
      Effect.flatMap((result) =>
        Effect.forEach(
          result.rows,
          (row) =>
            options.onLapsed({ taskId: row.task_id, replica: row.replica, tenant: row.tenant, owner: row.owner }),
          { discard: true }
        )
      ),
      Effect.catchAll((error) =>
        Effect.logWarning("Could not look for lapsed run claims").pipe(Effect.annotateLogs({ cause: String(error) }))
      )
    )
    // Whole, once begun: a row the sweep deleted is handled even when the replica stops meanwhile.
    yield* Effect.forkScoped(
      Effect.repeat(Effect.uninterruptible(sweep), Schedule.spaced(options.sweep ?? Duration.seconds(2)))
    )

    // This replica's claims lapse when it stops: another replica may take their tasks at once, and its sweep
    // finds those of runs that did not end (a durable run left to resume).
    yield* Effect.addFinalizer(() =>
      Effect.tryPromise(() => sql`update ${t} set lease_until = 0 where replica = ${replica}`.execute(db)).pipe(
        Effect.ignore
      )
    )

    return {
      replica,
      acquire: (taskId, holder) =>
        Effect.suspend(() => {
          const hold = held.get(taskId)
          if (hold !== undefined) {
            hold.count++
            return Effect.succeed(true)
          }
          // One row write per task at a time: a second hold waits for the first's answer and shares it.
          const pending = acquiring.get(taskId)
          if (pending !== undefined) {
            return Effect.map(Deferred.await(pending), (won) => {
              const shared = held.get(taskId)
              if (won && shared !== undefined) shared.count++
              return won && shared !== undefined
            })
          }
          const token = randomUUID()
          const deferred = Deferred.unsafeMake<boolean, unknown>(FiberId.none)
          acquiring.set(taskId, deferred)
          return Effect.tryPromise(() => {
            const at = Date.now()
            return sql<{ replica: string }>`insert into ${t} (task_id, replica, token, lease_until, tenant, owner)
              values (${taskId}, ${replica}, ${token}, ${at + leaseMillis}, ${holder.tenant}, ${holder.owner})
              on conflict (task_id) do update set replica = excluded.replica, token = excluded.token,
                lease_until = excluded.lease_until, tenant = excluded.tenant, owner = excluded.owner
              where ${t}.replica = ${replica} or ${t}.lease_until < ${at}
              returning replica`.execute(db)
          }).pipe(
            Effect.map((result) => {
              const won = result.rows.length > 0
              if (won) held.set(taskId, { count: 1, token })
              return won
            }),
            Effect.exit,
            Effect.tap((exit) => Deferred.done(deferred, exit)),
            Effect.ensuring(Effect.sync(() => acquiring.delete(taskId))),
            Effect.flatten
          )
        }),
      release: (taskId) =>
        Effect.suspend(() => {
          const hold = held.get(taskId)
          if (hold === undefined) return Effect.void
          if (--hold.count > 0) return Effect.void
          held.delete(taskId)
          return Effect.tryPromise(() =>
            sql`delete from ${t} where task_id = ${taskId} and token = ${hold.token}`.execute(db)
          )
            .pipe(
              Effect.catchAll((error) =>
                Effect.logWarning("Could not free a run claim; it lapses with its lease").pipe(
                  Effect.annotateLogs({ taskId, cause: String(error.error) })
                )
              )
            )
        }),
      lapse: (taskId) =>
        Effect.suspend(() => {
          const hold = held.get(taskId)
          if (hold === undefined) return Effect.void
          held.delete(taskId)
          return Effect.tryPromise(() =>
            sql`update ${t} set lease_until = 0 where task_id = ${taskId} and token = ${hold.token}`.execute(db)
          ).pipe(
            Effect.catchAll((error) =>
              Effect.logWarning("Could not let a run claim lapse; it lapses with its lease").pipe(
                Effect.annotateLogs({ taskId, cause: String(error.error) })
              )
            )
          )
        })
    }
  })
