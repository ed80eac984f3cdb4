/**
 * The system under test that the A2A TCK (a2aproject/a2a-tck) asks for: an
 * agent that behaves as its message's `messageId` prefix says, per the
 * TCK's scenarios (`scenarios/*.feature`, `docs/SUT_REQUIREMENTS.md`).
 * `effect-a2a playground --conformance` serves it. Built on the public API
 * only, so what the TCK finds is what a user's agent would meet.
 *
 * It answers `tck-message-response` with a bare Message, which takes the
 * server option `messageReplies`. One scenario the public API cannot
 * express is left to the default answer: `tck-stream-artifact-chunked`
 * (artifact chunks with `append`/`lastChunk`).
 */
import * as Config from "effect/Config"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as A2AServer from "../A2AServer.js"
import * as AgentExecutor from "../AgentExecutor.js"
import * as Part from "../Part.js"

/**
 * The extension the TCK's CORE-CAP-004 looks for on the card, marked
 * required, to check that a message without it is refused.
 */
export const requiredExtension = "urn:a2a:tck:required-extension"

/**
 * `TCK_STREAMING_TIMEOUT`, as the TCK reads it: seconds, 2 by default. A
 * task to resubscribe to stays WORKING for twice this long.
 */
const streamingTimeout = Config.number("TCK_STREAMING_TIMEOUT").pipe(
  Config.withDefault(2),
  Config.validate({ message: "TCK_STREAMING_TIMEOUT must be a positive number of seconds", validation: (s) => s > 0 })
)

const textArtifact = (text: string) =>
  Part.Artifact.make({
    artifactId: crypto.randomUUID(),
    name: "text",
    description: "",
    parts: [Part.TextPart.make({ text })]
  })

const fileArtifact = (file: { readonly bytes: Uint8Array } | { readonly url: string }) =>
  Part.Artifact.make({
    artifactId: crypto.randomUUID(),
    name: "file",
    description: "",
    parts: [Part.FilePart.make({ ...file, mediaType: "text/plain", filename: "output.txt" })]
  })

const withArtifacts = (...artifacts: ReadonlyArray<Part.Artifact>) => AgentExecutor.Completed({ parts: [], artifacts })

/** WORKING, then one artifact, then COMPLETED: what the streaming scenarios publish. */
const streamed = (artifact: Part.Artifact) =>
  Effect.gen(function*() {
    yield* AgentExecutor.status("working")
    yield* AgentExecutor.artifact(artifact)
    return withArtifacts()
  })

/**
 * The scenarios by prefix. Order matters where one prefix starts another
 * (`tck-artifact-file-url` before `tck-artifact-file`).
 */
const scenarios: ReadonlyArray<
  readonly [prefix: string, run: () => Effect.Effect<AgentExecutor.AgentResult, never, AgentExecutor.AgentProgress>]
> = [
  ["tck-complete-task", () => Effect.succeed(AgentExecutor.completedText("Hello from TCK"))],
  ["tck-artifact-text", () => Effect.succeed(withArtifacts(textArtifact("Generated text content")))],
  [
    "tck-artifact-file-url",
    () => Effect.succeed(withArtifacts(fileArtifact({ url: "https://example.com/output.txt" })))
  ],
  ["tck-artifact-file", () => Effect.succeed(withArtifacts(fileArtifact({ bytes: new TextEncoder().encode("tck") })))],
  ["tck-artifact-data", () =>
    Effect.succeed(withArtifacts(Part.Artifact.make({
      artifactId: crypto.randomUUID(),
      name: "data",
      description: "",
      parts: [Part.DataPart.make({ data: { key: "value", count: 42 } })]
    })))],
  ["tck-message-response", () => Effect.succeed(AgentExecutor.messageText("Direct message response"))],
  ["tck-input-required", () => Effect.succeed(AgentExecutor.InputRequired({ question: "More input is required." }))],
  ["tck-reject-task", () => Effect.succeed(AgentExecutor.Rejected({ reason: "rejected" }))],
  ["tck-stream-001", () => streamed(textArtifact("Stream hello from TCK"))],
  ["tck-stream-002", () => Effect.succeed(withArtifacts())],
  ["tck-stream-003", () => streamed(textArtifact("Stream task lifecycle"))],
  ["tck-stream-ordering-001", () => streamed(textArtifact("Ordered output"))],
  ["tck-stream-artifact-text", () => streamed(textArtifact("Streamed text content"))],
  ["tck-stream-artifact-file", () => streamed(fileArtifact({ bytes: new TextEncoder().encode("tck") }))],
  ["test-resubscribe-message-id", () =>
    Effect.gen(function*() {
      yield* AgentExecutor.status("working")
      // A malformed value is the operator's mistake: the task ends FAILED, its cause logged.
      const seconds = yield* Effect.orDie(streamingTimeout)
      yield* Effect.sleep(Duration.seconds(2 * seconds))
      return withArtifacts()
    })]
]

/**
 * The conformance agent: the scenario whose prefix the `messageId` starts
 * with; any other message completes with the text the TCK's own SUT gives.
 * Served with the server option `messageReplies`, which its bare Message takes.
 */
export const agent: AgentExecutor.Agent = (request) => {
  const { messageId } = request.message
  const scenario = scenarios.find(([prefix]) => messageId.startsWith(prefix))
  return scenario === undefined
    ? Effect.succeed(AgentExecutor.completedText(`Unhandled messageId prefix: ${messageId}`))
    : scenario[1]()
}

/**
 * The card of the conformance agent. With `requireExtension`, it declares
 * {@link requiredExtension} as required: every message that does not
 * activate it is then refused (ExtensionSupportRequiredError), the TCK's
 * other tests included, so that mode is for CORE-CAP-004 alone.
 */
export const card = (requireExtension: boolean): A2AServer.CardOptions => ({
  name: "conformance",
  description:
    "The A2A TCK's system under test: behaves as the messageId prefix says (tck-complete-task, tck-input-required, ...).",
  capabilities: {
    extensions: requireExtension
      ? [{ uri: requiredExtension, description: "The TCK's required extension.", required: true, params: undefined }]
      : []
  }
})
