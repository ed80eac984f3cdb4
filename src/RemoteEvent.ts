/**
 * What a streaming call to a remote agent yields: progress (`Status`),
 * artifact chunks (`Artifact`), and, last, the `Finished` outcome.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import * as Struct from "effect/Struct"
import { Artifact } from "./Part.js"
import { RemoteOutcome, Running } from "./RemoteOutcome.js"

/**
 * A status update that does not end the task: its `state` (`Submitted` or
 * `Working`), and the text and parts of its status message.
 *
 * @example
 * ```ts
 * import { Effect, Stream } from "effect"
 * import { RemoteAgent, RemoteEvent } from "effect-a2a"
 *
 * const logProgress = (agent: RemoteAgent.RemoteAgent) =>
 *   agent.stream("book flight 4821").pipe(
 *     Stream.filter((e): e is RemoteEvent.Status => e._tag === "Status"),
 *     Stream.runForEach((status) => Effect.logInfo(`${status.state}: ${status.text}`))
 *   )
 * ```
 * @category models
 * @since 0.1.0
 */
export class Status extends Schema.TaggedClass<Status>("effect-a2a/RemoteEvent/Status")(
  "Status",
  // What the task tells while it goes on, as `RemoteOutcome.Running` reads it.
  Struct.omit(Running.fields, "_tag")
) {}

/**
 * A chunk of an artifact. `append` adds to an earlier chunk of the same id.
 *
 * @example
 * ```ts
 * import { Stream } from "effect"
 * import { Part, RemoteAgent, RemoteEvent } from "effect-a2a"
 *
 * // the text of a report sent in appended chunks (the tag is "Artifact")
 * const reportText = (agent: RemoteAgent.RemoteAgent) =>
 *   agent.stream("write the trip report").pipe(
 *     Stream.filter((e): e is RemoteEvent.ArtifactChunk => e._tag === "Artifact" && e.artifact.artifactId === "report"),
 *     Stream.map((chunk) => Part.textOf(chunk.artifact.parts)),
 *     Stream.mkString
 *   )
 * ```
 * @category models
 * @since 0.1.0
 */
export class ArtifactChunk extends Schema.TaggedClass<ArtifactChunk>("effect-a2a/RemoteEvent/Artifact")("Artifact", {
  agent: Schema.String,
  taskId: Schema.String,
  contextId: Schema.String,
  artifact: Artifact,
  append: Schema.Boolean,
  lastChunk: Schema.Boolean
}) {}

/**
 * The last event of every stream that does not fail.
 *
 * @example
 * ```ts
 * import { Stream } from "effect"
 * import { RemoteEvent, RemoteOutcome } from "effect-a2a"
 *
 * // the stream of a stub agent in a test
 * const outcome = RemoteOutcome.Completed.make({ agent: "booking", taskId: "t1", contextId: "c1", text: "booked", parts: [], artifacts: [] })
 * const events = Stream.make(RemoteEvent.Finished.make({ outcome }))
 * ```
 * @category models
 * @since 0.1.0
 */
export class Finished extends Schema.TaggedClass<Finished>("effect-a2a/RemoteEvent/Finished")("Finished", {
  outcome: RemoteOutcome
}) {}

/**
 * @example
 * ```ts
 * import { Stream } from "effect"
 * import { RemoteAgent, RemoteEvent } from "effect-a2a"
 *
 * const lastOutcome = (agent: RemoteAgent.RemoteAgent) =>
 *   agent.stream("book flight 4821").pipe(
 *     Stream.filter((e): e is RemoteEvent.Finished => e._tag === "Finished"),
 *     Stream.runLast
 *   )
 * ```
 * @category models
 * @since 0.1.0
 */
export const RemoteEvent = Schema.Union(Status, ArtifactChunk, Finished)

/**
 * @category models
 * @since 0.1.0
 */
export type RemoteEvent = typeof RemoteEvent.Type
