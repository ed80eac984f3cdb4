/**
 * The opaque error id both sides share, written into a failure's text as
 * `error_id: <id>` and read back from there, so that the caller, the parent
 * model and `find-error` all name the one log entry. Ours, like ADK Java's,
 * is twelve lowercase hex digits; ADK Python writes eight
 * (`Agent execution failed. (error_id: 3f9c0a7b)`), so both are read.
 *
 * @internal
 */
import * as Option from "effect/Option"

// Eight hex digits, or twelve: the ids of the peers we know, and no other length.
const id = "[0-9a-f]{8}(?:[0-9a-f]{4})?"

/** An id alone, ours or a known peer's. */
export const pattern = new RegExp(`^${id}$`)

/** A new id. */
export const make = (): string => {
  // The first 12 hex digits of a version 4 UUID are all random (its fixed digits come later).
  const uuid = crypto.randomUUID()
  return uuid.slice(0, 8) + uuid.slice(9, 13)
}

/** How an id is written into a text. */
export const marker = (errorId: string): string => `error_id: ${errorId}`

/** How an id is written into a log message, as ADK Java and ADK Python write it. */
export const logMarker = (errorId: string): string => `error_id=${errorId}`

/**
 * A log message naming its id, as ADK Java writes it (`Runner failed to
 * execute [error_id=3f9c0a7b12de]`): a plain `grep <id>` of a text log finds
 * the message line itself, not only an annotation under it.
 */
export const logMessage = (message: string, errorId: string): string => `${message} [${logMarker(errorId)}]`

/** The only text a caller gets of a failed run. */
export const failureText = (errorId: string): string => `Agent execution failed. (${marker(errorId)})`

/** The only text a caller gets of a server fault outside a run (JSON-RPC -32603). */
export const internalErrorText = (errorId: string): string => `Internal error. (${marker(errorId)})`

/** `text` followed by its id. */
export const withErrorId = (text: string, errorId: string): string => `${text} (${marker(errorId)})`

// An id is whole: the marker is not followed by a further hex digit, of either case.
const inText = new RegExp(`error_id: (${id})(?![0-9a-fA-F])`, "g")
const internalError = /^Internal error\. \(error_id: [0-9a-f]{12}\)$/

/** The id in a text, when it holds exactly one: with two, which one the cause is under is not known. */
export const extract = (text: string): Option.Option<string> => {
  const matches = Array.from(text.matchAll(inText))
  return matches.length === 1 ? Option.fromNullable(matches[0]?.[1]) : Option.none()
}

/** Whether a message is exactly an {@link internalErrorText}. */
export const isInternalErrorText = (message: string): boolean => internalError.test(message)

/**
 * Whether `text` holds `errorId` as a whole id, after the marker of a
 * status text (`error_id: <id>`) or of a log line (`[error_id=<id>]`, as
 * ADK Java, ADK Python and ours write it): "3f9c" is not found in
 * "error_id: 3f9c0a7b12de".
 */
export const holds = (text: string, errorId: string): boolean =>
  [marker(errorId), logMarker(errorId)].some((written) => {
    for (let at = text.indexOf(written); at !== -1; at = text.indexOf(written, at + 1)) {
      if (!/[0-9a-fA-F]/.test(text.charAt(at + written.length))) return true
    }
    return false
  })
