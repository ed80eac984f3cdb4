/**
 * Message and artifact content as plain, Schema-described data, independent
 * of the wire encoding.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"

/**
 * Plain text, the content most agents read and write.
 *
 * @example
 * ```ts
 * import { Part, RemoteAgent } from "effect-a2a"
 *
 * declare const booking: RemoteAgent.RemoteAgent
 * booking.send({ parts: [Part.TextPart.make({ text: "book flight 4821 for Ana" })], contextId: "trip-42" })
 * ```
 * @category models
 * @since 0.1.0
 */
export class TextPart extends Schema.TaggedClass<TextPart>("effect-a2a/TextPart")("Text", {
  text: Schema.String
}) {}

/**
 * Structured data (any JSON value).
 *
 * @example
 * ```ts
 * import { Part } from "effect-a2a"
 *
 * const request = [
 *   Part.TextPart.make({ text: "book this flight" }),
 *   Part.DataPart.make({ data: { flight: "4821", date: "2025-06-01", passengers: ["Ana"] } })
 * ]
 * ```
 * @category models
 * @since 0.1.0
 */
export class DataPart extends Schema.TaggedClass<DataPart>("effect-a2a/DataPart")("Data", {
  data: Schema.Unknown
}) {}

/**
 * A file, by reference (`url`) or inline (`bytes`).
 *
 * @example
 * ```ts
 * import { Part } from "effect-a2a"
 *
 * const ticket = Part.FilePart.make({ url: "https://example.com/t/4821.pdf", mediaType: "application/pdf", filename: "ticket.pdf" })
 * const note = Part.FilePart.make({ bytes: new TextEncoder().encode("window seat"), mediaType: "text/plain", filename: "note.txt" })
 * ```
 * @category models
 * @since 0.1.0
 */
export class FilePart extends Schema.TaggedClass<FilePart>("effect-a2a/FilePart")("File", {
  url: Schema.optionalWith(Schema.String, { exact: true }),
  bytes: Schema.optionalWith(Schema.Uint8ArrayFromBase64, { exact: true }),
  mediaType: Schema.String,
  filename: Schema.String
}) {}

/**
 * @example
 * ```ts
 * import { Part } from "effect-a2a"
 * const part: Part.Part = Part.TextPart.make({ text: "hello" })
 * ```
 * @category models
 * @since 0.1.0
 */
export const Part = Schema.Union(TextPart, DataPart, FilePart)

/**
 * @category models
 * @since 0.1.0
 */
export type Part = typeof Part.Type

/**
 * An output of a task. Within a task, an artifact replaces an earlier one
 * with the same `artifactId` (or is joined to it, chunk by chunk); an empty
 * id is an id like any other, so give each artifact its own.
 *
 * @example
 * ```ts
 * import { Part } from "effect-a2a"
 * const report = Part.Artifact.make({
 *   artifactId: "report",
 *   name: "report.txt",
 *   description: "",
 *   parts: [Part.TextPart.make({ text: "all good" })]
 * })
 * ```
 * @category models
 * @since 0.1.0
 */
export class Artifact extends Schema.Class<Artifact>("effect-a2a/Artifact")({
  artifactId: Schema.String,
  name: Schema.String,
  description: Schema.String,
  parts: Schema.Array(Part)
}) {}

/**
 * The text parts of some content, joined by new lines.
 *
 * @example
 * ```ts
 * import { Part } from "effect-a2a"
 * Part.textOf([Part.TextPart.make({ text: "a" }), Part.TextPart.make({ text: "b" })]) // "a\nb"
 * ```
 * @category utils
 * @since 0.1.0
 */
export const textOf = (parts: ReadonlyArray<Part>): string => {
  let text: string | undefined
  for (const part of parts) {
    if (part._tag === "Text") text = text === undefined ? part.text : `${text}\n${part.text}`
  }
  return text ?? ""
}
