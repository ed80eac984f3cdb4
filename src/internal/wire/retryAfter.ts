/**
 * `Retry-After`, as both sides read it: the client from a refusal, the
 * push sender from a webhook.
 *
 * @internal
 */
import * as Duration from "effect/Duration"

/** Parses a `Retry-After` header: delta seconds or an HTTP date. @internal */
export const parseRetryAfter = (value: string | null, now: number): Duration.Duration | undefined => {
  if (value === null) return undefined
  const trimmed = value.trim()
  // Digits past what a number holds are no delay anyone can wait: ignored, like any other unreadable value.
  if (/^\d+$/.test(trimmed)) {
    return Number.isFinite(Number(trimmed) * 1000)
      ? Duration.seconds(Number(trimmed))
      : undefined
  }
  const date = Date.parse(trimmed)
  return Number.isNaN(date) ? undefined : Duration.millis(Math.max(0, date - now))
}
