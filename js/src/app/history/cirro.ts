/**
 * Upload to and fetch from Cirro, in the app (the JupyterLab panel and the notebook widget alike).
 *
 * One box under the actions: the project chosen from the user's Cirro projects (the
 * workspace's own preselected) instead of a flag; for an upload, the version's parent chain
 * is checked first (`cirro_plan`: nothing is sent), then the upload runs with what it sends
 * named and a progress bar, and its new dataset ID is said when done (the server records it,
 * so the tree's "not yet in Cirro" tag goes on the refresh that follows). A folder that is a copy
 * of a Cirro dataset (downloaded by hand: Cirro knows its ID) is said to be one, and not offered
 * an upload; its tag goes the same way. Every failure is the
 * service's one line, in the panel's style: the service words Cirro's errors for people.
 */

import { errorBox, h } from '../shared/dom';
import { formatBytes, plural } from '../shared/format';
import { TransportError, type Transport } from '../shared/transport';

export type CirroJob =
  | { kind: 'upload'; depth: number; label: string }
  | { kind: 'fetch'; datasetId: string; label: string };

export type CirroBoxOptions = {
  /** After an upload or a fetch succeeded: reload what shows (the tree's tag, the stack that resolves now). */
  done: () => Promise<void>;
};

export class CirroBox {
  readonly node: HTMLElement;
  private job: CirroJob | null = null;
  private token = 0;

  constructor(
    private readonly transport: Transport,
    private readonly opts: CirroBoxOptions
  ) {
    this.node = h('section', { class: 'sds-cirro', hidden: true, 'aria-label': 'Cirro' });
  }

  /** Open the box for `job`: list the projects, and for an upload check its parent chain. */
  async open(job: CirroJob): Promise<void> {
    const token = ++this.token;
    this.job = job;
    const heading = job.kind === 'upload' ? `Upload “${job.label}” to Cirro` : `Fetch ${job.label} from Cirro`;
    const status = h('div', { class: 'sds-cirro-status', role: 'status' }, 'Asking Cirro for your projects…');
    const close = h('button', { class: 'sds-button sds-cirro-close', type: 'button', onclick: () => this.close() }, 'Cancel');
    this.node.replaceChildren(h('h3', { class: 'sds-cirro-heading' }, heading), status, close);
    this.node.hidden = false;
    const [projects, plan] = await Promise.allSettled([
      this.transport.request('cirro_projects', {}),
      job.kind === 'upload' ? this.transport.request('cirro_plan', { version: job.depth }) : Promise.resolve(null)
    ]);
    if (token !== this.token) {
      return;
    }
    // the chain first: a version that cannot go up is refused before any project matters
    const failed = plan.status === 'rejected' ? plan.reason : projects.status === 'rejected' ? projects.reason : null;
    if (failed !== null) {
      status.replaceWith(errorBox(TransportError.from(failed).message));
      close.textContent = 'Close';
      return;
    }
    // a copy of a Cirro dataset (Cirro knows its ID): nothing to upload; it is recorded, so a reload drops the tag
    const copy = plan.status === 'fulfilled' ? plan.value?.data : null;
    if (copy?.copy_of) {
      status.replaceChildren(copy.said ?? `This folder is a copy of Cirro dataset ${copy.copy_of}; nothing to upload.`);
      close.textContent = 'Close';
      await this.opts.done();
      return;
    }
    const { projects: list, default: preferred } = (projects as PromiseFulfilledResult<{ data: { projects: { id: string; name: string }[]; default: string | null } }>).value.data;
    if (!list.length) {
      status.replaceWith(errorBox('Your Cirro account has no project to use; ask for access to one, then try again.'));
      close.textContent = 'Close';
      return;
    }
    const picker = h(
      'select',
      { class: 'sds-cirro-project', 'aria-label': 'Cirro project' },
      list.map(p => h('option', { value: p.id, selected: p.id === preferred }, p.name))
    ) as HTMLSelectElement;
    const what =
      plan.status === 'fulfilled' && plan.value
        ? `Its parent chain is in Cirro. It sends ${plural(plan.value.data.n_files, 'file')} (${formatBytes(plan.value.data.n_bytes)}) as the dataset “${plan.value.data.name}”.`
        : `Downloads it into the fetch folder, never into the mounted datasets.`;
    const go = h(
      'button',
      { class: 'sds-button sds-cirro-go', type: 'button', onclick: () => void this.run(picker.value, go, close) },
      job.kind === 'upload' ? 'Upload' : 'Fetch'
    ) as HTMLButtonElement;
    status.replaceChildren(what);
    this.node.replaceChildren(
      this.node.querySelector('h3')!,
      status,
      h('label', { class: 'sds-cirro-field' }, h('span', {}, 'Project'), picker),
      h('div', { class: 'sds-cirro-buttons' }, go, close)
    );
    picker.focus();
  }

  /** Upload or fetch into `project`; progress while it runs, then the outcome in one line. */
  private async run(project: string, go: HTMLButtonElement, close: HTMLButtonElement): Promise<void> {
    const job = this.job;
    if (!job) {
      return;
    }
    const token = ++this.token;
    go.disabled = true;
    close.disabled = true;
    for (const old of this.node.querySelectorAll('.sds-error, .sds-cirro-done')) {
      old.remove();
    }
    const progress = h(
      'div',
      { class: 'sds-cirro-progress', role: 'status' },
      h('progress', { 'aria-label': job.kind === 'upload' ? 'Uploading' : 'Fetching' }),
      h('span', {}, job.kind === 'upload' ? ' Uploading…' : ' Fetching…')
    );
    this.node.append(progress);
    try {
      const said =
        job.kind === 'upload'
          ? `Uploaded: now Cirro dataset ${(await this.transport.request('cirro_upload', { project, version: job.depth })).data.dataset_id}.`
          : `Fetched ${plural((await this.transport.request('cirro_fetch', { project })).data.fetched.length, 'dataset')}; the version reads whole now.`;
      if (token !== this.token) {
        return;
      }
      progress.replaceWith(h('div', { class: 'sds-cirro-done', role: 'status' }, said));
      go.hidden = true;
      close.textContent = 'Close';
      close.disabled = false;
      await this.opts.done();
    } catch (err) {
      if (token !== this.token) {
        return;
      }
      progress.replaceWith(errorBox(TransportError.from(err).message));
      go.disabled = false;
      close.disabled = false;
    }
  }

  close(): void {
    ++this.token;
    this.job = null;
    this.node.hidden = true;
    this.node.replaceChildren();
  }
}
