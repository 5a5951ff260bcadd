// The documentation a newcomer reads: a README short enough to read in minutes, naming every part
// of the repository, and links that all lead somewhere (a file that exists, a heading it holds).
import { existsSync, readFileSync, statSync } from 'node:fs'
import { execFileSync } from 'node:child_process'
import { dirname, join, relative } from 'node:path'
import { test } from 'tap'

const root = new URL('../../', import.meta.url).pathname
const tracked = execFileSync('git', ['ls-files'], { cwd: root, encoding: 'utf8' }).split('\n').filter(Boolean)
const markdown = tracked.filter((file) => file.endsWith('.md') && !file.startsWith('node_modules/'))

/** The lines outside fenced code blocks. */
function prose (text: string): string[] {
  let fenced = false
  return text.split('\n').filter((line) => {
    if (line.startsWith('```')) fenced = !fenced
    return !fenced && !line.startsWith('```')
  })
}

/** A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces as hyphens. */
function anchorOf (heading: string): string {
  return heading.trim().toLowerCase().replace(/[^\p{L}\p{N} _-]/gu, '').replace(/ /g, '-')
}

function anchorsIn (file: string): Set<string> {
  return new Set(prose(readFileSync(join(root, file), 'utf8')).filter((line) => /^#{1,6} /.test(line)).map((line) => anchorOf(line.replace(/^#+ /, ''))))
}

test('README.md is short: the two commands, the map, and an index of docs/', async (t) => {
  const readme = readFileSync(join(root, 'README.md'), 'utf8')
  const lines = readme.split('\n').length
  t.ok(lines <= 150, `${lines} lines`)
  t.match(readme, /```sh\nnpm install && npm start[^\n]*\nnpm test/, 'it starts with the two commands')
  for (const doc of tracked.filter((file) => /^docs\/[^/]+\.md$/.test(file))) t.ok(readme.includes(`](${doc})`), `links ${doc}`)
})

test('the README\'s map names every folder at the top of the repository', async (t) => {
  const readme = readFileSync(join(root, 'README.md'), 'utf8')
  const folders = [...new Set(tracked.filter((file) => file.includes('/') && !file.startsWith('.')).map((file) => file.split('/')[0] as string))]
  t.ok(folders.length > 10, folders.join(', '))
  t.same(folders.filter((folder) => !readme.includes(`\`${folder}/`)), [], 'none missing')
})

test('every relative link of the documentation leads to a file, and an anchor to a heading', async (t) => {
  const broken: string[] = []
  let checked = 0
  for (const file of markdown) {
    for (const line of prose(readFileSync(join(root, file), 'utf8'))) {
      for (const [, target = ''] of line.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z][a-z+.-]*:/i.test(target)) continue
        checked += 1
        const [path = '', anchor] = target.split('#')
        const resolved = path === '' ? file : relative(root, join(root, dirname(file), decodeURIComponent(path)))
        if (!existsSync(join(root, resolved))) {
          broken.push(`${file}: ${target} (no ${resolved})`)
          continue
        }
        if (anchor !== undefined && statSync(join(root, resolved)).isFile() && resolved.endsWith('.md') && !anchorsIn(resolved).has(anchor)) {
          broken.push(`${file}: ${target} (no heading #${anchor} in ${resolved})`)
        }
      }
    }
  }
  t.ok(checked > 50, `${checked} links in ${markdown.length} files`)
  t.same(broken, [])
})
