/**
 * Every exported declaration of a public module has a JSDoc comment with an
 * example and a `@category` (the docs' grouping), and every example compiles against the library as a user imports
 * it (`effect-a2a`), under the project's strict compiler options; so does every `ts` block of the README and of the
 * pages under docs/, but one that says above it why it is not compiled (`<!-- not compiled: … -->`). Their relative
 * links lead somewhere, and the README links every page.
 */
import { describe, expect, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as path from "node:path"
import ts from "typescript"

const root = path.resolve(import.meta.dirname, "..")
const modules = fs.readdirSync(path.join(root, "src"))
  .filter((file) => file.endsWith(".ts") && file !== "index.ts" && file !== "bin.ts")
  .sort()
// The prose a user reads: the README, then one page per topic.
const pages = [
  "README.md",
  ...fs.readdirSync(path.join(root, "docs")).filter((file) => file.endsWith(".md")).sort().map((file) => `docs/${file}`)
]
const pageText = (page: string) => fs.readFileSync(path.join(root, page), "utf8")

interface Example {
  readonly module: string
  readonly line: number
  readonly code: string
}

// The ```ts blocks of a file's JSDoc comments, each with the line it starts on.
const examplesOf = (module: string, text: string): Array<Example> => {
  const examples: Array<Example> = []
  const lines = text.split("\n")
  for (let i = 0; i < lines.length; i++) {
    if (!/^\s*\* ```ts\s*$/.test(lines[i]!)) continue
    const body: Array<string> = []
    let j = i + 1
    for (; j < lines.length && !/^\s*\* ```\s*$/.test(lines[j]!); j++) {
      body.push(lines[j]!.replace(/^\s*\*( |$)/, ""))
    }
    examples.push({ module, line: i + 2, code: body.join("\n") })
    i = j
  }
  return examples
}

// A Markdown page's ```ts blocks, each with the line it starts on; a block right below a `<!-- not compiled: why -->`
// line (one that needs a package this project does not install) is left out.
const markdownExamples = (page: string, text: string): Array<Example> => {
  const examples: Array<Example> = []
  const lines = text.split("\n")
  for (let i = 0; i < lines.length; i++) {
    if (lines[i] !== "```ts") continue
    const end = lines.indexOf("```", i + 1)
    if (!/^<!-- not compiled: .+ -->$/.test(lines[i - 1] ?? "")) {
      examples.push({ module: page, line: i + 2, code: lines.slice(i + 1, end).join("\n") })
    }
    i = end
  }
  return examples
}

// Exported names whose declarations' JSDoc all lack `tag`: a
// Schema and the type of the same name, or the signatures of an overloaded
// function, are one thing, documented once.
const undocumented = (module: string, text: string, tag: string): Array<string> => {
  const source = ts.createSourceFile(module, text, ts.ScriptTarget.Latest, true)
  const names = new Map<string, { line: number; documented: boolean }>()
  for (const statement of source.statements) {
    const exported = ts.canHaveModifiers(statement) &&
      ts.getModifiers(statement)?.some((modifier) => modifier.kind === ts.SyntaxKind.ExportKeyword)
    if (!exported) continue
    const declared = ts.isVariableStatement(statement)
      ? statement.declarationList.declarations.map((declaration) => declaration.name.getText(source))
      : [(statement as ts.DeclarationStatement).name?.getText(source) ?? "(unnamed)"]
    const documented = ts.getJSDocCommentsAndTags(statement).some((doc) => doc.getText(source).includes(tag))
    const line = source.getLineAndCharacterOfPosition(statement.getStart(source)).line + 1
    for (const name of declared) {
      const known = names.get(name)
      names.set(name, { line: known?.line ?? line, documented: documented || known?.documented === true })
    }
  }
  return [...names].filter(([, { documented }]) => !documented).map(([name, { line }]) => `${module}:${line} ${name}`)
}

const placeOf = (example: Example) => example.module.endsWith(".md") ? example.module : `src/${example.module}`

// GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens.
const anchorOf = (heading: string) => heading.trim().toLowerCase().replace(/[^\p{L}\p{N} _-]/gu, "").replace(/ /g, "-")

// The relative links of a page that lead nowhere: to no file, or to no heading of their page.
const brokenLinks = (page: string, text: string): Array<string> => {
  const prose = text.replace(/```[\s\S]*?```/g, "")
  return [...prose.matchAll(/\]\(([^)\s]+)\)/g)].map((match) => match[1]!)
    .filter((target) => !/^[a-z]+:/.test(target))
    .filter((target) => {
      const [file, anchor] = target.split("#") as [string, string | undefined]
      const linked = file === "" ? page : path.posix.normalize(path.posix.join(path.posix.dirname(page), file))
      if (!fs.existsSync(path.join(root, linked))) return true
      if (anchor === undefined) return false
      const headings = [...pageText(linked).replace(/```[\s\S]*?```/g, "").matchAll(/^#+ (.+)$/gm)]
        .map((heading) => anchorOf(heading[1]!))
      return !headings.includes(anchor)
    })
    .map((target) => `${page}: ${target}`)
}

describe("docs", () => {
  const sources = modules.map((module) => [module, fs.readFileSync(path.join(root, "src", module), "utf8")] as const)

  it("every export of a public module has a JSDoc example", () => {
    expect(sources.flatMap(([module, text]) => undocumented(module, text, "```ts"))).toEqual([])
  })

  it("every export of a public module has a docs category", () => {
    expect(sources.flatMap(([module, text]) => undocumented(module, text, "@category "))).toEqual([])
  })

  it("every @since names the package's version", () => {
    const { version } = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8")) as { version: string }
    const files = fs.readdirSync(path.join(root, "src"), { recursive: true, encoding: "utf8" }).filter((file) =>
      file.endsWith(".ts")
    )
    const later = files.flatMap((file) =>
      fs.readFileSync(path.join(root, "src", file), "utf8").split("\n").flatMap((line, i) =>
        [...line.matchAll(/@since (\S+)/g)].filter((match) => match[1] !== version).map((match) =>
          `src/${file}:${i + 1} ${match[0]}`
        )
      )
    )
    expect(later).toEqual([])
  })

  it("the README's install commands ask for the ranges package.json declares", () => {
    const manifest = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8")) as {
      dependencies: Record<string, string>
      peerDependencies: Record<string, string>
    }
    const declared: Record<string, string> = { ...manifest.dependencies, ...manifest.peerDependencies }
    // `^1.11` is `^1.11.0`.
    const full = (range: string) =>
      range.replace(
        /^\^(\d+)(\.\d+)?(\.\d+)?$/,
        (_, major, minor, patch) => `^${major}${minor ?? ".0"}${patch ?? ".0"}`
      )
    const asked = [...fs.readFileSync(path.join(root, "README.md"), "utf8").matchAll(/npm install ([^`\n]+)/g)]
      .flatMap((match) => match[1]!.trim().split(/\s+/))
      .filter((word) => /^@?[^@\s]+@\^/.test(word))
      .map((word) => {
        const at = word.lastIndexOf("@")
        return [word.slice(0, at), full(word.slice(at + 1))] as const
      })
    expect(asked.length).toBeGreaterThanOrEqual(8)
    expect(asked.filter(([name, range]) => declared[name] === undefined || full(declared[name]) !== range)).toEqual([])
  })

  it("the README's install section says the package is ESM-only; the docs show Observability.layerJsonLogs in compiled code", () => {
    const readme = pageText("README.md")
    const install = readme.slice(
      readme.indexOf("\n## Install\n"),
      readme.indexOf("\n## ", readme.indexOf("\n## Install\n") + 1)
    )
    expect(install).toContain("**ESM-only**")
    expect(install).toContain(`import("effect-a2a")`)
    const examples = pages.flatMap((page) => markdownExamples(page, pageText(page)))
    expect(examples.some((example) => example.code.includes("Observability.layerJsonLogs("))).toBe(true)
  })

  it("the README links every page under docs/, and every relative link of the docs leads to a file and a heading", () => {
    const readme = pageText("README.md")
    expect(pages.length).toBeGreaterThan(10)
    expect(pages.filter((page) => page !== "README.md" && !readme.includes(`](${page})`))).toEqual([])
    expect(pages.flatMap((page) => brokenLinks(page, pageText(page)))).toEqual([])
  })

  it("every JSDoc example, and every example of the README and the docs, compiles", () => {
    const readme = markdownExamples("README.md", pageText("README.md"))
    expect(readme.length).toBeGreaterThanOrEqual(2)
    const docs = pages.slice(1).flatMap((page) => markdownExamples(page, pageText(page)))
    expect(docs.length).toBeGreaterThanOrEqual(10)
    const examples = [...sources.flatMap(([module, text]) => examplesOf(module, text)), ...readme, ...docs]
    expect(examples.length).toBeGreaterThan(200)
    const config = ts.getParsedCommandLineOfConfigFile(path.join(root, "tsconfig.json"), undefined, {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (diagnostic) => {
        throw new Error(ts.flattenDiagnosticMessageText(diagnostic.messageText, "\n"))
      }
    })!
    // Each example is its own module, next to the sources so that `effect-a2a` resolves through the paths.
    const files = new Map(examples.map((example, i) => [
      path.join(root, "test", `.docs-${i}.ts`),
      { example, text: `${example.code}\nexport {}\n` }
    ]))
    const host = ts.createCompilerHost(config.options)
    const readFile = host.readFile
    host.readFile = (file) => files.get(path.resolve(file))?.text ?? readFile(file)
    const fileExists = host.fileExists
    host.fileExists = (file) => files.has(path.resolve(file)) || fileExists(file)
    const program = ts.createProgram({
      rootNames: [...files.keys()],
      options: { ...config.options, noEmit: true },
      host
    })
    const problems = [...files].flatMap(([file, { example }]) =>
      [
        ...program.getSyntacticDiagnostics(program.getSourceFile(file)),
        ...program.getSemanticDiagnostics(program.getSourceFile(file))
      ].map((diagnostic) => {
        const at = diagnostic.file !== undefined && diagnostic.start !== undefined
          ? diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start).line
          : 0
        const where = diagnostic.file?.fileName === file
          ? `${placeOf(example)}:${example.line + at}`
          : `${diagnostic.file?.fileName ?? "?"} (from the example at ${placeOf(example)}:${example.line})`
        return `${where}: ${ts.flattenDiagnosticMessageText(diagnostic.messageText, "\n")}`
      })
    )
    expect(problems).toEqual([])
  }, 180_000)
})
