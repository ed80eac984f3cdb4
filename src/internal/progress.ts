/**
 * What a running agent is given and what its output may fail with, apart
 * from the server's code that runs it, so that `AgentExecutor` (and the
 * index) can be imported by a client without loading a server.
 *
 * @internal
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type * as Part from "../Part.js"

/** Output of an agent that is not JSON data, so the wire could not carry it. */
export class InvalidOutput extends Schema.TaggedError<InvalidOutput>("effect-a2a/InvalidOutput")("InvalidOutput", {
  path: Schema.String,
  found: Schema.String
}) {
  override get message(): string {
    return `The agent's output is not JSON data at ${this.path}: ${this.found}`
  }
}

/** Progress reporting available to a running agent; see `AgentExecutor.AgentProgress`. */
export class AgentProgress extends Context.Tag("effect-a2a/AgentExecutor/AgentProgress")<
  AgentProgress,
  {
    /** A WORKING status update with a text message. */
    readonly status: (text: string) => Effect.Effect<void>
    /** A WORKING status update with a data part. */
    readonly data: (data: Part.Json) => Effect.Effect<void>
    /** An artifact update. */
    readonly artifact: (artifact: Part.Artifact) => Effect.Effect<void>
  }
>() {}
