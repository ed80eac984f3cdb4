/**
 * Conversion of our parts and artifacts to the wire shapes of `@a2a-js/sdk`.
 *
 * @internal
 */
import type { Artifact as WireArtifact, Message, Part as WirePart } from "@a2a-js/sdk"
import { Role, TaskState } from "@a2a-js/sdk"
import {
  type DefaultRequestHandler,
  type ExecutionEventBusManager,
  type ServerCallContext,
  STATE_HEADERS_KEY
} from "@a2a-js/sdk/server"
import type * as Part from "../Part.js"

/** @internal */
export const toWirePart = (part: Part.Part): WirePart => {
  switch (part._tag) {
    case "Text":
      return { content: { $case: "text", value: part.text }, metadata: {}, filename: "", mediaType: "text/plain" }
    case "Data":
      return { content: { $case: "data", value: part.data }, metadata: {}, filename: "", mediaType: "application/json" }
    case "File":
      return {
        content: part.bytes !== undefined
          ? { $case: "raw", value: Buffer.from(part.bytes) }
          : { $case: "url", value: part.url ?? "" },
        metadata: {},
        filename: part.filename,
        mediaType: part.mediaType
      }
  }
}

/** @internal */
export const toWireArtifact = (artifact: Part.Artifact): WireArtifact => ({
  artifactId: artifact.artifactId,
  name: artifact.name,
  description: artifact.description,
  parts: artifact.parts.map(toWirePart),
  metadata: {},
  extensions: []
})

/** @internal */
export const agentMessage = (
  taskId: string,
  contextId: string,
  parts: ReadonlyArray<WirePart>,
  metadata: Record<string, unknown> = {}
): Message => ({
  messageId: crypto.randomUUID(),
  contextId,
  taskId,
  role: Role.ROLE_AGENT,
  parts: [...parts],
  metadata,
  extensions: [],
  referenceTaskIds: []
})

/** @internal */
export const textPart = (text: string): WirePart => ({
  content: { $case: "text", value: text },
  metadata: {},
  filename: "",
  mediaType: "text/plain"
})

/** A state no further event changes: the task has ended. */
export const isTerminal = (state: TaskState | undefined): boolean =>
  state === TaskState.TASK_STATE_COMPLETED ||
  state === TaskState.TASK_STATE_FAILED ||
  state === TaskState.TASK_STATE_CANCELED ||
  state === TaskState.TASK_STATE_REJECTED

/** A state a run stops in: ended, or paused for input or auth. */
export const isSettled = (state: TaskState | undefined): boolean =>
  isTerminal(state) || state === TaskState.TASK_STATE_INPUT_REQUIRED || state === TaskState.TASK_STATE_AUTH_REQUIRED

/** The HTTP request headers the SDK keeps in a call's context. */
export type RequestHeaders = Readonly<Record<string, string | ReadonlyArray<string> | undefined>>

/** The request headers of a call, as the transport recorded them. */
export const headersOf = (context: ServerCallContext): RequestHeaders => {
  const headers = context.state.get(STATE_HEADERS_KEY)
  return typeof headers === "object" && headers !== null ? (headers as RequestHeaders) : {}
}

/**
 * The SDK request handler's arguments after the executor: `buses`, and
 * close the event bus of a task that pauses (input or auth required). Kept
 * open, it ends no stream of an AUTH_REQUIRED task, nor any resubscription
 * to a paused one, and each subscriber that leaves keeps a listener on it;
 * our runs end when they pause, and a follow-up message starts a new one.
 *
 * @internal
 */
export const handlerArguments = (buses: ExecutionEventBusManager): [
  ExecutionEventBusManager,
  undefined,
  undefined,
  undefined,
  undefined,
  NonNullable<ConstructorParameters<typeof DefaultRequestHandler>[8]>
] => [buses, undefined, undefined, undefined, undefined, { keepBusAliveStates: [] }]
