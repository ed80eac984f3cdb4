/**
 * What `Orchestrator` names apart from the loop that calls the model: the
 * instruction it adds, the error it fails with, and how a prompt's tool
 * results read. Apart, so that importing `Orchestrator` (as the index does)
 * loads none of `@effect/ai` until an orchestrator is made.
 *
 * @internal
 */
import type * as Prompt from "@effect/ai/Prompt"
import * as Schema from "effect/Schema"

/** @internal */
export const defaultInstruction =
  "Some work is delegated to sub-agents through tools. If a sub-agent replies with REMOTE_FAILED or " +
  "REMOTE_UNAVAILABLE, do not claim the action succeeded: say it could not be completed, give the error_id " +
  "when there is one, and offer to retry. REMOTE_REFUSED means the sub-agent refused the request and did " +
  "nothing: say so, with its reason, and do not claim the action succeeded; refused for authentication, it stays " +
  "refused until the credentials for that sub-agent are fixed, so do not offer to retry. REMOTE_CIRCUIT_OPEN means the request was not sent because the " +
  "sub-agent keeps failing: say the action could not be completed now and when it may be retried. " +
  "REMOTE_CANCELED and REMOTE_REJECTED mean the action was not done; give the reason. " +
  "REMOTE_INPUT_REQUIRED carries the sub-agent's question: ask it to the user. " +
  "REMOTE_AUTH_REQUIRED means the user must sign in or authorize first."

/** @internal */
export class OrchestratorError extends Schema.TaggedError<OrchestratorError>("effect-a2a/OrchestratorError")(
  "OrchestratorError",
  {
    reason: Schema.Literal("TurnLimit", "DuplicateTool"),
    /** The model calls made: 0 for DuplicateTool, which `make` returns before any. */
    turns: Schema.Int,
    /** DuplicateTool: the tool name, and the sub-agents that would share it. */
    tool: Schema.optional(Schema.String),
    agents: Schema.optional(Schema.Array(Schema.String))
  }
) {
  override get message(): string {
    return this.reason === "TurnLimit"
      ? `the model was still calling tools after ${this.turns} turns (those of the last turn were not run)`
      : `the sub-agents ${
        (this.agents ?? []).map((name) => JSON.stringify(name)).join(" and ")
      } are both offered as the tool ${this.tool}: rename one`
  }
}

/** @internal */
export const toolResults = (prompt: Prompt.Prompt): ReadonlyArray<string> =>
  prompt.content.flatMap((message) =>
    message.role === "tool"
      ? message.content.map((part) => typeof part.result === "string" ? part.result : JSON.stringify(part.result))
      : []
  )
