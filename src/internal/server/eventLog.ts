/**
 * STUB (interface only; the pgbus branch brings the implementations).
 *
 * @internal
 */
import type { Effect, Stream } from "effect"
import { Schema } from "effect"

export interface Entry {
  readonly seq: number
  readonly event: unknown
}
export class EventLogError extends Schema.TaggedError<EventLogError>()("EventLogError", {
  reason: Schema.Literal("Unavailable", "Conflict", "Decode"),
  message: Schema.String
}) {}
export interface EventLog {
  readonly last: (taskId: string) => Effect.Effect<number, EventLogError>
  readonly append: (taskId: string, seq: number, event: unknown) => void
  readonly flush: Effect.Effect<void>
  readonly follow: (taskId: string, after: number) => Stream.Stream<Entry, EventLogError>
  readonly read: (taskId: string, after: number) => Effect.Effect<ReadonlyArray<Entry>, EventLogError>
  readonly finish: (taskId: string) => void
}

import { Effect as E, Stream as S, SubscriptionRef } from "effect"

/** STUB memory log for development. */
export const makeMemory = (): E.Effect<EventLog> =>
  E.map(SubscriptionRef.make(0), (version) => {
    const tasks = new Map<string, Array<Entry>>()
    const after = (taskId: string, n: number) => (tasks.get(taskId) ?? []).filter((entry) => entry.seq > n)
    return {
      last: (taskId) => E.sync(() => tasks.get(taskId)?.at(-1)?.seq ?? 0),
      append: (taskId, seq, event) => {
        const entries = tasks.get(taskId) ?? []
        tasks.set(taskId, entries)
        entries.push({ seq, event: structuredClone(event) })
        E.runSync(SubscriptionRef.update(version, (n) => n + 1))
      },
      flush: E.void,
      read: (taskId, n) => E.sync(() => after(taskId, n)),
      follow: (taskId, n) =>
        S.suspend(() => {
          let cursor = n
          return version.changes.pipe(
            S.mapConcat(() => {
              const next = after(taskId, cursor)
              if (next.length > 0) cursor = next.at(-1)!.seq
              return next
            })
          )
        }),
      finish: () => undefined
    }
  })

const stubLogs = new Map<string, EventLog>()
/** STUB: one memory log per URL. */
export const makePg = (options: { readonly url: string }): E.Effect<EventLog, EventLogError> =>
  E.suspend(() => {
    const known = stubLogs.get(options.url)
    if (known !== undefined) return E.succeed(known)
    return E.tap(makeMemory(), (log) => E.sync(() => stubLogs.set(options.url, log)))
  })
