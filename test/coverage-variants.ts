// V8 coverage is recorded per process as byte ranges of the code the process ran. c8 adds the
// ranges of all processes up per file and maps them back through one source map, which is only
// right when every process compiled the file to the same code. tsx compiles each file with the
// options of the TypeScript configuration it finds, and a process that found other options (class
// fields, say) compiles it differently; merged, its ranges land on the wrong lines and can mark a
// well-tested file as barely run. This step keeps, for each file, the coverage of the processes
// that share the most common compilation and leaves out the others' coverage of that file.
// First, each process's coverage is cut down to the project's own files: V8 writes every script a
// process ran (dependencies, Node's internals), several gigabytes that c8 would read only to drop.
import { readdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'

interface ScriptCoverage { url: string }
interface SourceMapEntry { lineLengths?: number[], data?: unknown }
interface ProcessCoverage {
  result: ScriptCoverage[]
  'source-map-cache'?: Record<string, SourceMapEntry>
}

/**
 * The shape of the code a process ran: the lengths of its lines, without the last one, which is
 * the inline source map (that differs with paths alone and does not move any range).
 */
function compilationOf (entry: SourceMapEntry | undefined): string {
  return JSON.stringify(entry?.lineLengths?.slice(0, -1) ?? null)
}

/** Answers, per file left out somewhere, how many processes' coverage of it was dropped. */
export async function dropMinorityCompilations (directory: string, root: string): Promise<Map<string, number>> {
  const names = (await readdir(directory)).filter((name) => name.endsWith('.json'))
  const compiled = new Map<string, Map<string, number>>()
  const seen: Array<{ name: string, variants: Map<string, string> }> = []
  const project = pathToFileURL(root).href.replace(/\/?$/, '/')
  const own = (url: string): boolean => url.startsWith(project) && !url.includes('/node_modules/')
  for (const name of names) {
    const coverage = JSON.parse(await readFile(join(directory, name), 'utf8')) as ProcessCoverage
    const before = coverage.result.length
    coverage.result = coverage.result.filter((script) => own(script.url))
    const cache = coverage['source-map-cache']
    if (cache !== undefined) for (const url of Object.keys(cache)) if (!own(url)) delete cache[url]
    if (coverage.result.length !== before) await writeFile(join(directory, name), JSON.stringify(coverage))
    const maps = coverage['source-map-cache'] ?? {}
    const variants = new Map<string, string>()
    for (const { url } of coverage.result) {
      if (!url.startsWith('file://') || url.includes('/node_modules/') || maps[url] === undefined) continue
      const variant = compilationOf(maps[url])
      variants.set(url, variant)
      const counts = compiled.get(url) ?? new Map<string, number>()
      counts.set(variant, (counts.get(variant) ?? 0) + 1)
      compiled.set(url, counts)
    }
    seen.push({ name, variants })
  }
  const majority = new Map<string, string>()
  for (const [url, counts] of compiled) {
    if (counts.size < 2) continue
    majority.set(url, [...counts].sort((a, b) => b[1] - a[1])[0]?.[0] ?? '')
  }
  const dropped = new Map<string, number>()
  for (const { name, variants } of seen) {
    const odd = [...variants].filter(([url, variant]) => majority.has(url) && majority.get(url) !== variant).map(([url]) => url)
    if (odd.length === 0) continue
    const path = join(directory, name)
    const coverage = JSON.parse(await readFile(path, 'utf8')) as ProcessCoverage
    coverage.result = coverage.result.filter((script) => !odd.includes(script.url))
    for (const url of odd) {
      delete coverage['source-map-cache']?.[url]
      dropped.set(url, (dropped.get(url) ?? 0) + 1)
    }
    await writeFile(path, JSON.stringify(coverage))
  }
  return dropped
}
