// The page's keyboard shortcuts (lib/shortcuts.ts says which key does what) on the document.
import { useEffect, useRef } from 'preact/hooks'
import { shortcutFor, type ShortcutAction } from '../lib/shortcuts.js'

function isTyping (target: Element | null): boolean {
  if (target === null) return false
  if (target instanceof HTMLElement && target.isContentEditable) return true
  return target.closest('input, textarea, select, [contenteditable=""], [contenteditable="true"]') !== null
}

export function useShortcuts (run: (action: ShortcutAction) => void): void {
  // The latest handler, without re-adding the listener on every render.
  const handler = useRef(run)
  handler.current = run
  useEffect(() => {
    const onKey = (press: KeyboardEvent) => {
      if (press.defaultPrevented || press.repeat) return
      const target = press.target instanceof Element ? press.target : null
      const action = shortcutFor({
        key: press.key,
        altKey: press.altKey,
        ctrlKey: press.ctrlKey,
        metaKey: press.metaKey,
        typing: isTyping(target),
        inDialog: target?.closest('dialog[open]') != null,
        arrowsTaken: target?.closest('[role=radiogroup], [role=slider], [role=tablist], [role=listbox], [role=menu]') != null
      })
      if (action === null) return
      press.preventDefault()
      handler.current(action)
    }
    document.addEventListener('keydown', onKey)
    return () => document.removeEventListener('keydown', onKey)
  }, [])
}
