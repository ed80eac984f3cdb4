/**
 * Conversions between the SDK's wire types and our Schema-described values.
 */
import type { Artifact as SdkArtifact, Message, Part as SdkPart, Task } from "@a2a-js/sdk"
import { Role, TaskState } from "@a2a-js/sdk"
import { Option } from "effect"
import * as FailureHint from "../FailureHint.js"
import * as Part from "../Part.js"
import * as RemoteOutcome from "../RemoteOutcome.js"

/**
 * The instance `Class.make(props)` returns, built without the
 * constructor's per-field defaults pass: conversion runs on every call, and
 * that pass was its costliest part. Only for values already checked.
 */
export const build = <C extends new(props: any, options?: any) => object>(
  Class: C,
  props: ConstructorParameters<C>[0]
): InstanceType<C> => {
  const instance = Object.assign(Object.create(Class.prototype), props)
  const tag: unknown = (Class as { readonly _tag?: unknown })._tag
  if (tag !== undefined) instance._tag = tag
  return instance
}

export const fromSdkPart = (part: SdkPart): Part.Part => {
  const content = part.content
  switch (content?.$case) {
    case "text":
      return build(Part.TextPart, { text: String(content.value) })
    case "data":
      return build(Part.DataPart, { data: content.value ?? null })
    case "url":
      return build(Part.FilePart, { url: String(content.value), mediaType: part.mediaType ?? "", filename: part.filename ?? "" })
    case "raw":
      return build(Part.FilePart, {
        bytes: new Uint8Array(content.value),
        mediaType: part.mediaType ?? "",
        filename: part.filename ?? ""
      })
    default:
      return build(Part.DataPart, { data: null })
  }
}

export const textSdkPart = (text: string): SdkPart => ({
  content: { $case: "text", value: text },
  metadata: undefined,
  filename: "",
  mediaType: ""
})

export const toSdkPart = (part: Part.Part): SdkPart => {
  const base = { metadata: undefined, filename: "", mediaType: "" }
  switch (part._tag) {
    case "Text":
      return textSdkPart(part.text)
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
  build(Part.Artifact, {
    artifactId: String(artifact.artifactId ?? ""),
    name: String(artifact.name ?? ""),
    description: String(artifact.description ?? ""),
    parts: partsOf(artifact.parts)
  })

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
      return Option.some(build(RemoteOutcome.Completed, fields))
    case TaskState.TASK_STATE_FAILED:
      return Option.some(
        build(RemoteOutcome.Failed, {
          ...fields,
          errorId: RemoteOutcome.extractErrorId(fields.text),
          hint: FailureHint.fromMetadata(message?.metadata)
        })
      )
    case TaskState.TASK_STATE_CANCELED:
      return Option.some(build(RemoteOutcome.Canceled, fields))
    case TaskState.TASK_STATE_REJECTED:
      return Option.some(build(RemoteOutcome.Rejected, fields))
    case TaskState.TASK_STATE_INPUT_REQUIRED:
      return Option.some(build(RemoteOutcome.InputRequired, fields))
    case TaskState.TASK_STATE_AUTH_REQUIRED:
      return Option.some(build(RemoteOutcome.AuthRequired, fields))
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

/** A user message of the SDK's shape. */
export const userMessage = (
  parts: Array<SdkPart>,
  contextId: string | undefined,
  taskId: string | undefined,
  metadata: Record<string, unknown> | undefined
): Message => ({
  messageId: crypto.randomUUID(),
  contextId: contextId ?? "",
  taskId: taskId ?? "",
  role: Role.ROLE_USER,
  parts,
  metadata,
  extensions: [],
  referenceTaskIds: []
})
