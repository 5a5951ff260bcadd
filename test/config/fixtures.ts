import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { parse, stringify } from 'yaml'

export const exampleYaml = readFileSync(fileURLToPath(new URL('../../config.example.yaml', import.meta.url)), 'utf8')

type Patch = Record<string, unknown>

// The example file with dotted keys replaced (undefined removes the key).
export function exampleWith (patch: Patch): string {
  const document = parse(exampleYaml) as Record<string, unknown>
  for (const [dotted, value] of Object.entries(patch)) {
    const path = dotted.split('.')
    const last = path.pop() as string
    let node = document
    for (const key of path) {
      node[key] ??= {}
      node = node[key] as Record<string, unknown>
    }
    if (value === undefined) Reflect.deleteProperty(node, last)
    else node[last] = value
  }
  return stringify(document)
}
