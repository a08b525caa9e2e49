// The translation page of `keras-transformer serve`: plain JavaScript that
// asks the server's TF Serving REST API (`controlled`, `controlled_nbest`,
// `align` and `attention` signatures) and nothing else.
"use strict";

const BATCH = 8; // sentences a request
const COMPLETION_DELAY_MS = 400; // typing pauses this long before completing
const NEUTRAL = {
  repetition_penalty: 1.0,
  no_repeat_ngram_size: 0,
  min_length: 0,
  disable_unk: false,
};
let settings = null; // page/settings.json: model, version, beam_size, alpha
let sentences = []; // {source, translation, links, element, timer, asked}
let generation = 0; // a new Translate click makes older answers stale

const $ = (selector, root = document) => root.querySelector(selector);

async function predict(signature, inputs) {
  const response = await fetch(
    `v1/models/${encodeURIComponent(settings.model)}:predict`,
    {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ signature_name: signature, inputs }),
    },
  );
  const answer = await response.json().catch(() => ({}));
  if (!response.ok) {
    throw new Error(answer.error || `The server answered ${response.status}.`);
  }
  return answer.outputs;
}

function showError(error) {
  const box = $("#error");
  box.textContent = error.message || String(error);
  box.hidden = false;
}

function splitSentences(text) {
  const segmenter = new Intl.Segmenter(undefined, { granularity: "sentence" });
  const found = [];
  for (const line of text.split("\n")) {
    for (const { segment } of segmenter.segment(line)) {
      if (segment.trim()) found.push(segment.trim());
    }
  }
  return found;
}

function parseLinks(line) {
  return line
    .split(" ")
    .filter(Boolean)
    .map((link) => link.split("-").map(Number));
}

function words(text) {
  return text.trim() ? text.trim().split(/\s+/) : [];
}

function glossary() {
  return [...document.querySelectorAll("#glossary tbody tr")]
    .map((row) => ({
      source: $(".term-source", row).value.trim(),
      target: $(".term-target", row).value.trim(),
    }))
    .filter((term) => term.source && term.target);
}

function termsOf(source) {
  const lower = source.toLowerCase();
  return glossary().filter((term) => lower.includes(term.source.toLowerCase()));
}

function rowInputs(sources, prefixes) {
  const required = sources.map((source) => termsOf(source).map((t) => t.target));
  const width = Math.max(1, ...required.map((terms) => terms.length));
  const each = (value) => sources.map(() => value);
  return {
    text: sources,
    prefix: prefixes,
    repetition_penalty: each(NEUTRAL.repetition_penalty),
    no_repeat_ngram_size: each(NEUTRAL.no_repeat_ngram_size),
    min_length: each(NEUTRAL.min_length),
    disable_unk: each(NEUTRAL.disable_unk),
    banned: each([""]),
    required: required.map((terms) => [
      ...terms,
      ...Array(width - terms.length).fill(""),
    ]),
  };
}

async function translated(sources, prefixes) {
  const outputs = await predict("controlled", rowInputs(sources, prefixes));
  // `align` has one output: TF Serving answers it bare, without its name
  const alignments = await predict("align", {
    source: sources,
    target: outputs.translation,
  });
  return outputs.translation.map((translation, row) => ({
    translation,
    links: parseLinks(alignments[row]),
  }));
}

function wordSpans(container, text) {
  container.replaceChildren(
    ...words(text).flatMap((word, index) => {
      const span = document.createElement("span");
      span.className = "word";
      span.dataset.index = index;
      span.textContent = word;
      return [span, document.createTextNode(" ")];
    }),
  );
}

function render(entry) {
  const element = entry.element;
  wordSpans($(".source-words", element), entry.source);
  wordSpans($(".target-words", element), entry.translation);
  $(".target-edit", element).value = entry.translation;
  const terms = $(".terms", element);
  terms.replaceChildren(
    ...termsOf(entry.source).map((term) => {
      const used = entry.translation.includes(term.target);
      const span = document.createElement("span");
      span.className = `term ${used ? "used" : "missed"}`;
      span.textContent = `${term.source} → ${term.target}: ${used ? "used" : "not used"}`;
      return span;
    }),
  );
}

function lightSources(entry, targetIndex) {
  const lit = new Set(
    entry.links.filter(([, j]) => j === targetIndex).map(([i]) => i),
  );
  for (const span of entry.element.querySelectorAll(".source-words .word")) {
    span.classList.toggle("lit", lit.has(Number(span.dataset.index)));
  }
}

function newEntry(source) {
  const element = $("#sentence-template").content.firstElementChild.cloneNode(true);
  const entry = {
    source,
    translation: "",
    links: [],
    element,
    timer: null,
    completions: 0,
  };
  const targets = $(".target-words", element);
  targets.addEventListener("mouseover", (event) => {
    if (event.target.classList.contains("word")) {
      lightSources(entry, Number(event.target.dataset.index));
    }
  });
  targets.addEventListener("mouseleave", () => lightSources(entry, -1));
  const edit = $(".target-edit", element);
  edit.addEventListener("input", () => {
    clearTimeout(entry.timer);
    entry.timer = setTimeout(() => complete(entry), COMPLETION_DELAY_MS);
  });
  $(".alternatives", element).addEventListener("click", () => alternatives(entry));
  $(".attention", element).addEventListener("click", () => attentionMap(entry));
  return entry;
}

async function busy(entry, work) {
  const marker = $(".busy", entry.element);
  marker.hidden = false;
  try {
    await work();
  } catch (error) {
    showError(error);
  } finally {
    marker.hidden = true;
  }
}

async function complete(entry) {
  const edit = $(".target-edit", entry.element);
  const typed = edit.value;
  const prefix = typed.slice(0, edit.selectionStart ?? typed.length);
  await busy(entry, async () => {
    const [answer] = await translated([entry.source], [prefix]);
    if (edit.value !== typed) return; // typed on: a newer completion comes
    Object.assign(entry, answer);
    render(entry);
    edit.setSelectionRange(prefix.length, prefix.length);
    // how many completions the sentence shows (tests and timings wait on it)
    entry.element.dataset.completions = ++entry.completions;
  });
}

async function alternatives(entry) {
  const list = $(".alternative-list", entry.element);
  await busy(entry, async () => {
    const inputs = rowInputs([entry.source], [""]);
    inputs.beam_size = settings.beam_size;
    inputs.alpha = settings.alpha;
    const outputs = await predict("controlled_nbest", inputs);
    const seen = new Set();
    list.replaceChildren(
      ...outputs.translations[0]
        .filter((text) => text && !seen.has(text) && seen.add(text))
        .map((text) => {
          const item = document.createElement("li");
          const button = document.createElement("button");
          button.type = "button";
          button.textContent = text;
          button.addEventListener("click", () => choose(entry, text));
          item.append(button);
          return item;
        }),
    );
    list.hidden = false;
  });
}

async function choose(entry, text) {
  await busy(entry, async () => {
    const alignments = await predict("align", { source: [entry.source], target: [text] });
    entry.translation = text;
    entry.links = parseLinks(alignments[0]);
    render(entry);
    $(".alternative-list", entry.element).hidden = true;
  });
}

async function attentionMap(entry) {
  const canvas = $(".attention-map", entry.element);
  await busy(entry, async () => {
    const outputs = await predict("attention", { text: [entry.source] });
    const source = outputs.source_pieces[0].filter(Boolean);
    const target = outputs.target_pieces[0].filter(Boolean);
    const layers = outputs.cross_attention[0];
    const heads = layers[layers.length - 1]; // the last layer, heads averaged
    const cell = 22;
    const margin = 90;
    canvas.width = margin + cell * source.length;
    canvas.height = margin + cell * target.length;
    const context = canvas.getContext("2d");
    context.fillStyle = "#fff";
    context.fillRect(0, 0, canvas.width, canvas.height);
    context.font = "11px sans-serif";
    context.fillStyle = "#222";
    target.forEach((piece, t) => {
      context.fillText(piece, 2, margin + cell * t + 15, margin - 4);
      source.forEach((_, s) => {
        const weight = heads.reduce((sum, head) => sum + head[t][s], 0) / heads.length;
        context.fillStyle = `rgba(31, 81, 160, ${weight})`;
        context.fillRect(margin + cell * s, margin + cell * t, cell - 1, cell - 1);
        context.fillStyle = "#222";
      });
    });
    source.forEach((piece, s) => {
      context.save();
      context.translate(margin + cell * s + 15, margin - 4);
      context.rotate(-Math.PI / 2);
      context.fillText(piece, 0, 0, margin - 4);
      context.restore();
    });
    canvas.title = `${outputs.translation[0]} (the last layer's heads averaged)`;
    canvas.hidden = false;
  });
}

async function translateAll() {
  const mine = ++generation;
  $("#error").hidden = true;
  const sources = splitSentences($("#source").value);
  sentences = sources.map(newEntry);
  $("#sentences").replaceChildren(...sentences.map((entry) => entry.element));
  const progress = $("#progress");
  progress.max = Math.max(1, sources.length);
  progress.value = 0;
  progress.hidden = sources.length === 0;
  for (let start = 0; start < sentences.length; start += BATCH) {
    const batch = sentences.slice(start, start + BATCH);
    try {
      const answers = await translated(
        batch.map((entry) => entry.source),
        batch.map(() => ""),
      );
      if (mine !== generation) return;
      batch.forEach((entry, row) => {
        Object.assign(entry, answers[row]);
        render(entry);
      });
    } catch (error) {
      if (mine === generation) showError(error);
      return;
    }
    progress.value = start + batch.length;
    $("#progress-text").textContent = `${progress.value} of ${sources.length} sentences`;
  }
  progress.hidden = true;
}

function addTerm(source = "", target = "") {
  const row = document.createElement("tr");
  row.innerHTML =
    '<td><input class="term-source" aria-label="source term"></td>' +
    '<td><input class="term-target" aria-label="target term"></td>' +
    '<td><button type="button" class="remove-term">Remove</button></td>';
  $(".term-source", row).value = source;
  $(".term-target", row).value = target;
  $(".remove-term", row).addEventListener("click", () => row.remove());
  $("#glossary tbody").append(row);
}

async function start() {
  try {
    const response = await fetch("page/settings.json");
    settings = await response.json();
    $("#model-name").textContent = settings.model;
    $("#model-status").textContent =
      `version ${settings.version}, beam size ${settings.beam_size}`;
  } catch (error) {
    showError(new Error(`The server does not answer: ${error.message}`));
    return;
  }
  $("#translate").addEventListener("click", translateAll);
  $("#add-term").addEventListener("click", () => addTerm());
  addTerm();
  document.body.dataset.ready = "true";
}

start();
