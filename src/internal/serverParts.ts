/**
 * Conversion of our parts and artifacts to the wire shapes of `@a2a-js/sdk`.
 *
 * @internal
 */
import type { Artifact as WireArtifact, Message, Part as WirePart } from "@a2a-js/sdk"
import { Role } from "@a2a-js/sdk"
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
