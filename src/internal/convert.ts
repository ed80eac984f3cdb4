/**
 * Conversions between the SDK's wire types and our Schema-described values.
 */
import type { Artifact as SdkArtifact, Message, Part as SdkPart, Task } from "@a2a-js/sdk"
import { Role, TaskState } from "@a2a-js/sdk"
import { Option } from "effect"
import * as FailureHint from "../FailureHint.js"
import * as Part from "../Part.js"
import * as RemoteOutcome from "../RemoteOutcome.js"

export const fromSdkPart = (part: SdkPart): Part.Part => {
  const content = part.content
  switch (content?.$case) {
    case "text":
      return Part.TextPart.make({ text: String(content.value) }, true)
    case "data":
      return Part.DataPart.make({ data: content.value ?? null }, true)
    case "url":
      return Part.FilePart.make({ url: String(content.value), mediaType: part.mediaType ?? "", filename: part.filename ?? "" }, true)
    case "raw":
      return Part.FilePart.make({
        bytes: new Uint8Array(content.value),
        mediaType: part.mediaType ?? "",
        filename: part.filename ?? ""
      }, true)
    default:
      return Part.DataPart.make({ data: null }, true)
  }
}

export const toSdkPart = (part: Part.Part): SdkPart => {
  const base = { metadata: undefined, filename: "", mediaType: "" }
  switch (part._tag) {
    case "Text":
      return { ...base, content: { $case: "text", value: part.text } }
    case "Data":
      return { ...base, content: { $case: "data", value: part.data } }
    case "File":
      return {
        ...base,
        filename: part.filename,
        mediaType: part.mediaType,
        content: part.bytes !== undefined
          ? { $case: "raw", value: Buffer.from(part.bytes) }
          : { $case: "url", value: part.url ?? "" }
      }
  }
}

const partsOf = (parts: ReadonlyArray<SdkPart> | undefined) => Array.isArray(parts) ? parts.map(fromSdkPart) : []

export const fromSdkArtifact = (artifact: SdkArtifact): Part.Artifact =>
  Part.Artifact.make({
    artifactId: String(artifact.artifactId ?? ""),
    name: String(artifact.name ?? ""),
    description: String(artifact.description ?? ""),
    parts: partsOf(artifact.parts)
  }, true)

/** The outcome of a task in `state`, or none when the state is not final. */
export const outcomeOf = (
  agent: string,
  taskId: string,
  contextId: string,
  state: TaskState | undefined,
  message: Message | undefined,
  artifacts: ReadonlyArray<Part.Artifact>
): Option.Option<RemoteOutcome.RemoteOutcome> => {
  const parts = partsOf(message?.parts)
  const fields = { agent, taskId, contextId, text: Part.textOf(parts), parts, artifacts }
  switch (state) {
    case TaskState.TASK_STATE_COMPLETED:
      return Option.some(RemoteOutcome.Completed.make(fields, true))
    case TaskState.TASK_STATE_FAILED:
      return Option.some(
        RemoteOutcome.Failed.make({
          ...fields,
          errorId: RemoteOutcome.extractErrorId(fields.text),
          hint: FailureHint.fromMetadata(message?.metadata)
        }, true)
      )
    case TaskState.TASK_STATE_CANCELED:
      return Option.some(RemoteOutcome.Canceled.make(fields, true))
    case TaskState.TASK_STATE_REJECTED:
      return Option.some(RemoteOutcome.Rejected.make(fields, true))
    case TaskState.TASK_STATE_INPUT_REQUIRED:
      return Option.some(RemoteOutcome.InputRequired.make(fields, true))
    case TaskState.TASK_STATE_AUTH_REQUIRED:
      return Option.some(RemoteOutcome.AuthRequired.make(fields, true))
    default:
      return Option.none()
  }
}

export const isRunning = (state: TaskState | undefined): boolean =>
  state === TaskState.TASK_STATE_SUBMITTED || state === TaskState.TASK_STATE_WORKING

export const stateName = (state: TaskState | undefined): string => TaskState[state ?? TaskState.UNRECOGNIZED] ?? String(state)

export const taskOutcome = (agent: string, task: Task): Option.Option<RemoteOutcome.RemoteOutcome> =>
  outcomeOf(
    agent,
    String(task.id ?? ""),
    String(task.contextId ?? ""),
    task.status?.state,
    task.status?.message,
    Array.isArray(task.artifacts) ? task.artifacts.map(fromSdkArtifact) : []
  )

/** A bare message reply: the interaction completed without a task. */
export const messageOutcome = (agent: string, message: Message): RemoteOutcome.RemoteOutcome =>
  Option.getOrThrow(
    outcomeOf(agent, String(message.taskId ?? ""), String(message.contextId ?? ""), TaskState.TASK_STATE_COMPLETED, message, [])
  )

export const userMessage = (input: {
  readonly parts: ReadonlyArray<Part.Part>
  readonly contextId?: string | undefined
  readonly taskId?: string | undefined
  readonly metadata?: Readonly<Record<string, unknown>> | undefined
}): Message => ({
  messageId: crypto.randomUUID(),
  contextId: input.contextId ?? "",
  taskId: input.taskId ?? "",
  role: Role.ROLE_USER,
  parts: input.parts.map(toSdkPart),
  metadata: input.metadata === undefined ? undefined : { ...input.metadata },
  extensions: [],
  referenceTaskIds: []
})
