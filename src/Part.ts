/**
 * Message and artifact content as plain, Schema-described data, independent
 * of the wire encoding.
 *
 * @since 0.1.0
 */
import type * as FastCheck from "effect/FastCheck"
import * as Schema from "effect/Schema"
import * as json from "./internal/wire/json.js"

/**
 * A JSON value: what a data part, `AgentExecutor.data` and message metadata
 * can carry across the wire. A `Date`, a `bigint`, a `Map`, a function or a
 * class instance does not compile; encode it to plain data first (with
 * `Schema.encodeSync`, say). An object field that is `undefined` counts as
 * absent, as in `JSON.stringify`.
 *
 * An interface-typed object does not compile either: TypeScript gives
 * interfaces no implicit index signature, so declare such shapes with
 * `type` (as object literals and `Schema` types already are).
 *
 * @example
 * ```ts
 * import { Part } from "effect-a2a"
 *
 * type Booking = { readonly flight: string; readonly seats: ReadonlyArray<string>; readonly note?: string }
 * const booking: Booking = { flight: "4821", seats: ["12A"] }
 * const data: Part.Json = booking
 * ```
 * @category models
 * @since 0.1.0
 */
export type Json =
  | null
  | boolean
  | number
  | string
  | ReadonlyArray<Json>
  | JsonObject

/**
 * A JSON object, the shape of message metadata.
 *
 * @example
 * ```ts
 * import { Part } from "effect-a2a"
 *
 * const metadata: Part.JsonObject = { channel: "web", attempt: 2 }
 * ```
 * @category models
 * @since 0.1.0
 */
export type JsonObject = { readonly [key: string]: Json | undefined }

const isJson = (value: unknown): value is Json => json.notJson(value, "") === undefined

const isJsonObject = (value: unknown): value is JsonObject =>
  typeof value === "object" && value !== null && !Array.isArray(value) && isJson(value)

const notJsonMessage = (expected: string) => (issue: { readonly actual: unknown }): string => {
  const problem = json.notJson(issue.actual, "value")
  return problem === undefined
    ? `Expected ${expected}`
    : `Expected ${expected}, found ${problem.found} at ${problem.path}`
}

/**
 * The schema of a {@link Json} value: decoding checks the whole value in one
 * walk (cycles and non-finite numbers included) and names the first place it
 * is not JSON.
 *
 * @example
 * ```ts
 * import { Part } from "effect-a2a"
 * import type { FastCheck } from "effect"
import * as Schema from "effect/Schema"
 *
 * Schema.decodeUnknownSync(Part.Json)(JSON.parse('{"flight":"4821"}'))
 * Schema.is(Part.Json)({ at: new Date() }) // false
 * ```
 * @category schemas
 * @since 0.1.0
 */
export const Json: Schema.Schema<Json> = Schema.declare(isJson, {
  identifier: "Json",
  description: "a JSON value",
  jsonSchema: {},
  arbitrary: () => (fc) => fc.jsonValue() as FastCheck.Arbitrary<Json>,
  message: notJsonMessage("a JSON value")
})

/**
 * The schema of a {@link JsonObject}.
 *
 * @example
 * ```ts
 * import { Part } from "effect-a2a"
 * import type { FastCheck } from "effect"
import * as Schema from "effect/Schema"
 *
 * Schema.decodeUnknownSync(Part.JsonObject)({ channel: "web" })
 * ```
 * @category schemas
 * @since 0.1.0
 */
export const JsonObject: Schema.Schema<JsonObject> = Schema.declare(isJsonObject, {
  identifier: "JsonObject",
  description: "a JSON object",
  jsonSchema: { type: "object" },
  arbitrary: () => (fc) => fc.dictionary(fc.string(), fc.jsonValue()) as FastCheck.Arbitrary<JsonObject>,
  message: notJsonMessage("a JSON object")
})

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
 * Structured data: any JSON value ({@link Json}). Its type is the check when
 * it is made (a value typed `any` is checked where it leaves, as all output
 * is, and `Schema.decodeUnknown(Part.Part)` checks it when decoding).
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
  data: Json
}) {
  // Made without the field check by default: the type already holds, and a
  // value typed `any` is refused where it leaves, with the path and a typed
  // error (`InvalidOutput`, an `InvalidRequest`), instead of a throw here.
  constructor(props: { readonly data: Json }, options: Schema.MakeOptions = true) {
    super(props, options)
  }
}

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
