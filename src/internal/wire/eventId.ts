/**
 * The resumption extension both sides share: each event of a task's stream
 * carries its place in the task's event log, in its metadata (so that gRPC
 * carries it too) and as the SSE `id:`, and a caller that lost its stream
 * hands back the last place it saw to resume right after it.
 *
 * @internal
 */
import type { AgentExtension, StreamResponse } from "@a2a-js/sdk"

/** The extension's URI, as the card declares it. @internal */
export const resumeExtensionUri = "urn:effect-a2a:ext:resume:v1"

/** The metadata key of an event's place. @internal */
export const sequenceKey = "effect-a2a/seq"

/**
 * The request header (gRPC metadata key) that names the last event seen,
 * as SSE's own reconnect sends it; lower case, as Node and gRPC give
 * headers.
 *
 * @internal
 */
export const cursorHeader = "last-event-id"

/** What the card says of it. @internal */
export const resumeExtension: AgentExtension = {
  uri: resumeExtensionUri,
  description:
    `Each event of a task's stream carries its place in the task's event log (metadata "${sequenceKey}", and the SSE id). ` +
    `SubscribeToTask with the header "Last-Event-ID" (gRPC metadata "${cursorHeader}") set to a place resumes right after it, on any replica.`,
  required: false,
  params: { metadataKey: sequenceKey, cursorHeader: "Last-Event-ID" }
}

const payloadKeys = ["task", "message", "statusUpdate", "artifactUpdate"] as const

const numberAt = (metadata: unknown): number | undefined => {
  const value = typeof metadata === "object" && metadata !== null
    ? (metadata as Record<string, unknown>)[sequenceKey]
    : undefined
  return typeof value === "number" && Number.isSafeInteger(value) && value > 0 ? value : undefined
}

/** The place of an event, in the SDK's form. @internal */
export const sequenceOf = (event: StreamResponse): number | undefined => numberAt(event.payload?.value.metadata)

/**
 * The place of an event in its JSON form: a v1.0 `StreamResponse` (one key
 * per kind of payload) or a v0.3 event (the payload itself, with `kind`).
 *
 * @internal
 */
export const sequenceOfJson = (json: unknown): number | undefined => {
  if (typeof json !== "object" || json === null) return undefined
  const record = json as Record<string, unknown>
  const own = numberAt(record["metadata"])
  if (own !== undefined) return own
  for (const key of payloadKeys) {
    const payload = record[key]
    if (typeof payload === "object" && payload !== null) {
      return numberAt((payload as Record<string, unknown>)["metadata"])
    }
  }
  return undefined
}

/**
 * `data`'s SSE event, with its place as the `id:` when it has one; without
 * one, the SDK's `formatSSEEvent` byte for byte.
 *
 * @internal
 */
export const sseEvent = (data: unknown, id: number | undefined): string =>
  `${id === undefined ? "" : `id: ${id}\n`}data: ${JSON.stringify(data)}\n\n`

/**
 * The place to resume after, from a request's headers: none without the
 * header; a value that is not a whole number of at most 15 digits is the
 * caller's mistake.
 *
 * @internal
 */
export const cursorOf = (
  headers: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>
): { readonly _tag: "None" } | { readonly _tag: "After"; readonly seq: number } | { readonly _tag: "Invalid" } => {
  const raw = headers[cursorHeader]
  const value = Array.isArray(raw) ? raw[0] : raw
  if (value === undefined) return { _tag: "None" }
  const text = String(value).trim()
  return /^\d{1,15}$/.test(text) ? { _tag: "After", seq: Number(text) } : { _tag: "Invalid" }
}
