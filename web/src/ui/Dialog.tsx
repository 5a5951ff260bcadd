// A modal dialog on the native <dialog>: the browser makes the page behind it inert and moves focus
// into it; this puts focus back where it was when the dialog closes.
// Its content may change while it stays open (an event's details, then its form): `view` names
// what is shown, and focus moves into the new content as it did on opening.
// Every close made here (Escape, or the parent closing it) gives the focus back and tells the
// parent at once. The browser's `close` event comes a task later, and a key pressed in between
// (Escape, then Enter on the event again, or an arrow key) must act on the page as it is then.
import type { ComponentChildren } from 'preact'
import { useEffect, useLayoutEffect, useRef } from 'preact/hooks'

function focusFirst (dialog: HTMLDialogElement): void {
  // One query with both would take whichever comes first in the document, not the marked one.
  const first = dialog.querySelector<HTMLElement>('[autofocus]') ?? dialog.querySelector<HTMLElement>('input:not([type=hidden]), select, textarea, button')
  first?.focus()
}

export function Dialog (props: { open: boolean, labelledBy: string, onClose: () => void, children: ComponentChildren, class?: string, view?: string }) {
  const ref = useRef<HTMLDialogElement>(null)
  const opener = useRef<Element | null>(null)
  const shownView = useRef<string | undefined>(undefined)
  /** This close was made here: the parent knows it, and the focus went back. */
  const closedHere = useRef(false)

  function giveFocusBack (dialog: HTMLDialogElement): void {
    const back = opener.current
    opener.current = null
    // Only when the close left it nowhere: not when it was moved on since.
    const focused = document.activeElement
    const focusLost = focused === null || focused === document.body || dialog.contains(focused)
    if (focusLost && back instanceof HTMLElement && back.isConnected) back.focus()
  }

  function closeHere (dialog: HTMLDialogElement): void {
    closedHere.current = true
    dialog.close()
    giveFocusBack(dialog)
  }

  // At every render, before it is painted: a close and an open drawn in one render leave `open` as
  // it was, and a dialog the browser closed must still open again.
  useLayoutEffect(() => {
    const dialog = ref.current
    if (dialog === null) return
    if (props.open && !dialog.open) {
      opener.current = document.activeElement
      closedHere.current = false
      dialog.showModal()
      shownView.current = props.view
      focusFirst(dialog)
    } else if (!props.open && dialog.open) {
      closeHere(dialog)
    } else if (props.open && shownView.current !== props.view) {
      shownView.current = props.view
      focusFirst(dialog)
    }
  })

  useEffect(() => {
    const dialog = ref.current
    if (dialog === null) return
    // A close the browser made (a close request other than Escape on the dialog's content).
    const onClose = () => {
      if (dialog.open || closedHere.current) return
      giveFocusBack(dialog)
      props.onClose()
    }
    dialog.addEventListener('close', onClose)
    return () => dialog.removeEventListener('close', onClose)
  }, [props.onClose])

  function onKeyDown (press: KeyboardEvent): void {
    const dialog = ref.current
    if (press.key !== 'Escape' || press.isComposing || press.defaultPrevented || dialog === null || !dialog.open) return
    press.preventDefault()
    closeHere(dialog)
    props.onClose()
  }

  return (
    <dialog ref={ref} aria-labelledby={props.labelledBy} class={props.class ?? 'dialog'} onKeyDown={onKeyDown}>
      {props.open ? props.children : null}
    </dialog>
  )
}
