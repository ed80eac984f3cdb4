/**
 * Our parts, artifacts and messages in the wire shapes of `@a2a-js/sdk`, and
 * back: one encoding for both sides, the one the SDK's own server writes
 * (a text part is `text/plain` with empty metadata).
 *
 * @internal
 */
import { type Artifact as WireArtifact, type Message, type Part as WirePart, Role, type Task } from "@a2a-js/sdk"
import * as Option from "effect/Option"
import type * as AgentExecutor from "../../AgentExecutor.js"
import * as Part from "../../Part.js"
import * as taskState from "./taskState.js"

/**
 * The instance `Class.make(props)` returns, built without the
 * constructor's per-field defaults pass: conversion runs on every call, and
 * that pass was its costliest part. Only for values already checked.
 */
export const build = <C extends new(props: never, options?: never) => object>(
  Class: C,
  props: ConstructorParameters<C>[0]
): InstanceType<C> => {
  const instance = Object.assign(Object.create(Class.prototype), props)
  const tag: unknown = (Class as { readonly _tag?: unknown })._tag
  if (tag !== undefined) instance._tag = tag
  return instance
}

/** A text part, as the SDK's server writes one. */
export const textPart = (text: string): WirePart => ({
  content: { $case: "text", value: text },
  metadata: {},
  filename: "",
  mediaType: "text/plain"
})

export const toWirePart = (part: Part.Part): WirePart => {
  switch (part._tag) {
    case "Text":
      return textPart(part.text)
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

/** A part of any peer's; one without content is read as empty data. */
export const fromWirePart = (part: WirePart): Part.Part => {
  const content = part.content
  switch (content?.$case) {
    case "text":
      return build(Part.TextPart, { text: String(content.value) })
    case "data":
      return build(Part.DataPart, { data: content.value ?? null })
    case "url":
      return build(Part.FilePart, {
        url: String(content.value),
        mediaType: part.mediaType ?? "",
        filename: part.filename ?? ""
      })
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

/** The parts of a peer's message or artifact; none when it sent no list. */
export const fromWireParts = (parts: ReadonlyArray<WirePart> | undefined): Array<Part.Part> =>
  Array.isArray(parts) ? parts.map(fromWirePart) : []

/**
 * The caller's message as an agent reads it. Its metadata and data parts
 * were parsed from JSON (or built by the SDK's own client from JSON values),
 * so they are JSON by construction: mapped, not checked again.
 */
export const fromUserMessage = (message: Message): AgentExecutor.RequestMessage => ({
  messageId: message.messageId ?? "",
  parts: fromWireParts(message.parts),
  metadata: message.metadata ?? {},
  referenceTaskIds: message.referenceTaskIds ?? []
})

const roles: Partial<Record<Role, AgentExecutor.TaskMessage["role"]>> = {
  [Role.ROLE_USER]: "User",
  [Role.ROLE_AGENT]: "Agent"
}

const fromTaskMessage = (message: Message): AgentExecutor.TaskMessage => ({
  ...fromUserMessage(message),
  role: roles[message.role] ?? "Unspecified"
})

/** The task a message continues, as an agent reads it; as the caller's message, JSON by construction. */
export const fromTask = (task: Task): AgentExecutor.RequestTask => ({
  id: task.id,
  contextId: task.contextId,
  state: taskState.literalOf(task.status?.state),
  statusMessage: Option.map(Option.fromNullable(task.status?.message), fromTaskMessage),
  history: (task.history ?? []).map(fromTaskMessage),
  artifacts: (task.artifacts ?? []).map(fromWireArtifact),
  metadata: task.metadata ?? {}
})

export const toWireArtifact = (artifact: Part.Artifact): WireArtifact => ({
  artifactId: artifact.artifactId,
  name: artifact.name,
  description: artifact.description,
  parts: artifact.parts.map(toWirePart),
  metadata: {},
  extensions: []
})

export const fromWireArtifact = (artifact: WireArtifact): Part.Artifact =>
  build(Part.Artifact, {
    artifactId: String(artifact.artifactId ?? ""),
    name: String(artifact.name ?? ""),
    description: String(artifact.description ?? ""),
    parts: fromWireParts(artifact.parts)
  })

/** A message of the SDK's shape, with a new id; `parts` is the caller's own fresh array, taken as it is. */
const message = (
  role: Role,
  parts: Array<WirePart>,
  contextId: string,
  taskId: string,
  metadata: Record<string, unknown> | undefined
): Message => ({
  messageId: crypto.randomUUID(),
  contextId,
  taskId,
  role,
  parts,
  metadata,
  extensions: [],
  referenceTaskIds: []
})

/** The caller's message. */
export const userMessage = (
  parts: Array<WirePart>,
  contextId: string | undefined,
  taskId: string | undefined,
  metadata: Record<string, unknown> | undefined
): Message => message(Role.ROLE_USER, parts, contextId ?? "", taskId ?? "", metadata)

/** A message of the agent's, about a task. */
export const agentMessage = (
  taskId: string,
  contextId: string,
  parts: Array<WirePart>,
  metadata: Record<string, unknown> = {}
): Message => message(Role.ROLE_AGENT, parts, contextId, taskId, metadata)
