/**
 * A LISTEN connection of our own to PostgreSQL, kept open: a `pg` client
 * (the one `@effect/sql-pg` listens on never notices that it was lost),
 * reconnected with backoff, and asked a heartbeat so that a connection lost
 * without a word (a half-open TCP connection) is noticed. A notification
 * sent while it was down is lost: its owner is told once it is back, to
 * read what it may have missed. The event log's wake-ups and the SQL task
 * store's cancels each hold one.
 *
 * @internal
 */
import * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberId from "effect/FiberId"
import * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"

interface Notification {
  readonly channel: string
  readonly payload?: string | undefined
}

/** The part of a `pg` client the LISTEN connection uses. */
interface ListenClient {
  connect(): Promise<void>
  query(text: string): Promise<unknown>
  end(): Promise<void>
  escapeIdentifier(name: string): string
  on(event: "error", listener: (error: unknown) => void): void
  on(event: "end", listener: () => void): void
  on(event: "notification", listener: (notification: Notification) => void): void
}

/** @internal */
export interface Options {
  readonly url: string
  /** 1 to 63 bytes: PostgreSQL cuts a longer name, and the notifications would go to another channel. */
  readonly channel: string
  /** The connection's `application_name`, as `pg_stat_activity` shows it (one the URL names wins). */
  readonly applicationName: string
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- pg ships no types of its own
  readonly driver: any
  /** Who listens, as the log lines name it: `The event log`. */
  readonly who: string
  /** What happens once the connection is back, as its log line says it. */
  readonly whenBack: string
  readonly notified: (payload: string | undefined) => void
  /** The connection is back after a loss: what was notified meanwhile is lost. */
  readonly reconnected: () => void
}

const messageOf = (error: unknown): string => error instanceof Error ? error.message : String(error)

// How long the connection may take to answer a heartbeat, and how often it is asked.
const heartbeatEvery = Duration.seconds(10)
const heartbeatWithin = Duration.seconds(5)
const reconnectPause = Duration.millis(100)
const reconnectBackoff = Schedule.exponential("100 millis").pipe(Schedule.either(Schedule.spaced("5 seconds")))

/** A channel name PostgreSQL keeps as given, or why not. @internal */
export const channelProblem = (channel: string): string | undefined =>
  channel === "" || Buffer.byteLength(channel) > 63
    ? `must be 1 to 63 bytes long, not ${Buffer.byteLength(channel)}`
    : undefined

/**
 * Listens on `options.channel` for the scope. The first connection is made
 * before this succeeds (its failure is this effect's, the driver's error);
 * later losses are logged, and reconnected with backoff.
 *
 * @internal
 */
export const listen = (options: Options): Effect.Effect<void, unknown, Scope.Scope> =>
  Effect.gen(function*() {
    const Client = (options.driver.default ?? options.driver).Client as new(config: object) => ListenClient
    // A connection listening on the channel, and what ends it (its reason): an `error` or `end` event, or a
    // heartbeat left unanswered.
    const connect = Effect.tryPromise({
      try: async (signal) => {
        const client = new Client({
          connectionString: options.url,
          application_name: options.applicationName,
          keepAlive: true
        })
        const lost = Deferred.unsafeMake<string>(FiberId.none)
        // Without an `error` listener, a lost connection would end the process.
        client.on("error", (error) => Deferred.unsafeDone(lost, Exit.succeed(messageOf(error))))
        client.on("end", () => Deferred.unsafeDone(lost, Exit.succeed("the connection ended")))
        client.on("notification", (notification) => {
          if (notification.channel === options.channel) options.notified(notification.payload)
        })
        try {
          await client.connect()
          await client.query(`listen ${client.escapeIdentifier(options.channel)}`)
          // Interrupted meanwhile (its scope closed): no one would end it, and it would keep the process alive.
          if (signal.aborted) throw new Error("interrupted while connecting")
        } catch (error) {
          await client.end().catch(() => undefined)
          throw error
        }
        return { client, lost }
      },
      catch: (error) => error
    })
    type Listener = Effect.Effect.Success<typeof connect>
    const lostOf = ({ client, lost }: Listener): Effect.Effect<string> =>
      Effect.race(
        Deferred.await(lost),
        Effect.tryPromise(() => client.query("select 1")).pipe(
          Effect.timeoutFail({ duration: heartbeatWithin, onTimeout: () => "no answer to a heartbeat" }),
          Effect.repeat(Schedule.spaced(heartbeatEvery)),
          Effect.flatMap(() => Effect.never),
          Effect.catchAll((error) => Effect.succeed(typeof error === "string" ? error : messageOf(error.error)))
        )
      )

    let current = yield* connect
    yield* Effect.addFinalizer(() => Effect.promise(() => current.client.end().catch(() => undefined)))
    const keep = Effect.gen(function*() {
      while (true) {
        const reason = yield* lostOf(current)
        const since = yield* Clock.currentTimeMillis
        yield* Effect.logWarning(`${options.who} lost its LISTEN connection; reconnecting: ${reason}`)
        yield* Effect.promise(() => current.client.end().catch(() => undefined))
        // A pause first, so that a connection lost again at once is not retried in a tight loop.
        current = yield* Effect.retry(Effect.delay(connect, reconnectPause), reconnectBackoff)
        const now = yield* Clock.currentTimeMillis
        yield* Effect.logInfo(
          `${options.who}'s LISTEN connection is back after ${now - since} ms; ${options.whenBack}`
        )
        options.reconnected()
      }
    })
    yield* Effect.forkScoped(keep)
  })
