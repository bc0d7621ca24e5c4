//! Greedy generation with a decoder exported by `tvm.relax.frontend.nn` (`export_tvm`
//! of an `nn.Module` with `prefill` and `decode` methods and `nn.KVCache`s):
//! `_initialize_effect()` makes the caches, `prefill(ids, caches..., weights...)` runs the
//! prompt, then each `decode(ids, [total_seq_len,] caches..., weights...)` step one token.
//! Both return `(logits, (caches...))`; the next token is the argmax of the last row of
//! the logits.
//!
//! Arguments are matched to parameters by their StructInfo: a parameter named in the
//! weights takes that weight, an integer tensor the token ids, a shape (`R.Shape([n])`)
//! or integer `R.Prim` the total sequence length after the step, and an object
//! (`R.Any`) the next cache. The module is loaded once: every step reuses the kernels
//! compiled for the first one (shapes are symbolic).

use std::time::Instant;

use relax_ir::relax::StructInfo;
use relax_ir::{BaseFunc, DataType, GlobalVar};

use crate::engine::Loaded;
use crate::error::{EngineError, Result};
use crate::params::{printed_name, Params};
use crate::value::{PrimValue, Tensor, Value};

/// The function names of an exported decoder.
#[derive(Clone, Debug)]
pub struct DecoderFunctions {
    /// Makes the caches (`_initialize_effect`); `None` when the program has no effects.
    pub init: Option<String>,
    /// Runs the prompt (`prefill`).
    pub prefill: String,
    /// Runs one token (`decode`).
    pub decode: String,
}

impl Default for DecoderFunctions {
    fn default() -> DecoderFunctions {
        DecoderFunctions {
            init: Some("_initialize_effect".into()),
            prefill: "prefill".into(),
            decode: "decode".into(),
        }
    }
}

/// What a generation produced.
#[derive(Clone, Debug, Default)]
pub struct Generation {
    /// The new token ids (the first from `prefill`, one more per `decode` step).
    pub tokens: Vec<i64>,
    /// The logits each token was chosen from (`tokens.len()` rows of `vocab` values).
    pub logits: Vec<Vec<f32>>,
    /// Wall time of `_initialize_effect` and `prefill`, reading the logits included.
    pub prefill_ms: f64,
    /// Mean wall time of a `decode` step, reading the logits included (0 without steps).
    pub decode_ms_per_token: f64,
    /// `decode` steps run.
    pub decode_steps: usize,
}

impl Generation {
    /// Decode tokens per second (0 without decode steps).
    pub fn tokens_per_second(&self) -> f64 {
        if self.decode_ms_per_token > 0.0 {
            1e3 / self.decode_ms_per_token
        } else {
            0.0
        }
    }
}

/// How one parameter of `prefill` / `decode` is filled.
#[derive(Clone)]
enum Slot {
    Ids(DataType),
    TotalShape,
    TotalPrim(DataType),
    Cache,
    Weight(Value),
}

/// A loaded decoder with its weights, ready to generate.
pub struct Decoder<'a> {
    loaded: &'a Loaded,
    funcs: DecoderFunctions,
    prefill: Vec<Slot>,
    decode: Vec<Slot>,
    /// The weights, where [`Decoder::weights_to_vdevice`] placed them.
    weights: Params,
}

impl<'a> Decoder<'a> {
    /// Match the parameters of `funcs.prefill` and `funcs.decode` of `loaded` to the
    /// token ids, the total length, the caches and the `weights` (by name, as
    /// [`crate::bind_args`] does).
    pub fn new(loaded: &'a Loaded, weights: &Params, funcs: DecoderFunctions) -> Result<Decoder<'a>> {
        let prefill = slots(loaded, &funcs.prefill, weights)?;
        let decode = slots(loaded, &funcs.decode, weights)?;
        Ok(Decoder {
            loaded,
            funcs,
            prefill,
            decode,
            weights: weights.clone(),
        })
    }

    /// Place every weight on the VDevice `vdevice` (`"webgpu"` keeps them in GPU memory
    /// for every step), once.
    pub fn weights_to_vdevice(&mut self, vdevice: &str) -> Result<()> {
        let mut moved: Vec<(Tensor, Tensor)> = Vec::new();
        let loaded = self.loaded;
        let mut place = |t: &Tensor| -> Result<Tensor> {
            if let Some((_, d)) = moved.iter().find(|(a, _)| a.shares_memory_with(t)) {
                return Ok(d.clone());
            }
            let d = loaded.to_vdevice(t, vdevice)?;
            moved.push((t.clone(), d.clone()));
            Ok(d)
        };
        for slots in [&mut self.prefill, &mut self.decode] {
            for s in slots.iter_mut() {
                if let Slot::Weight(Value::Tensor(t)) = s {
                    *s = Slot::Weight(Value::Tensor(place(t)?));
                }
            }
        }
        let mut weights = Params::new();
        for (name, v) in self.weights.iter() {
            let v = match v {
                Value::Tensor(t) => Value::Tensor(place(t)?),
                other => other.clone(),
            };
            weights.insert(name, v);
        }
        self.weights = weights;
        Ok(())
    }

    /// Run `func` once on the token ids `ids` with fresh caches (from `init`, not
    /// timed) and the weights, its parameters matched as `prefill`'s are: `prefill`
    /// itself, or a forward pass over the whole sequence that leaves the caches alone.
    /// Gives the last row of the logits and the wall time of the call in ms (reading
    /// the logits included).
    pub fn run_once(&self, func: &str, ids: &[i64]) -> Result<(Vec<f32>, f64)> {
        if ids.is_empty() {
            return Err(EngineError::Invalid(format!("`{func}` needs a non-empty sequence")));
        }
        let slots = slots(self.loaded, func, &self.weights)?;
        let mut caches = self.init_caches()?;
        let t = Instant::now();
        let logits = self.step(func, &slots, ids, ids.len() as i64, &mut caches)?;
        Ok((logits, t.elapsed().as_secs_f64() * 1e3))
    }

    /// The caches `init` makes (none without `init`).
    fn init_caches(&self) -> Result<Vec<Value>> {
        Ok(match &self.funcs.init {
            Some(init) => match self.loaded.run(init, &[])? {
                Value::Tuple(t) => t.to_vec(),
                other => vec![other],
            },
            None => Vec::new(),
        })
    }

    /// Run `init`, `prefill` on `prompt`, then greedy `decode` steps until
    /// `max_new_tokens` tokens are generated.
    pub fn generate(&self, prompt: &[i64], max_new_tokens: usize) -> Result<Generation> {
        if prompt.is_empty() {
            return Err(EngineError::Invalid("generation needs a non-empty prompt".into()));
        }
        let mut out = Generation::default();
        if max_new_tokens == 0 {
            return Ok(out);
        }
        let t0 = Instant::now();
        let mut caches = self.init_caches()?;
        let mut total = prompt.len() as i64;
        let logits = self.step(&self.funcs.prefill, &self.prefill, prompt, total, &mut caches)?;
        out.prefill_ms = t0.elapsed().as_secs_f64() * 1e3;
        out.tokens.push(argmax(&logits)?);
        out.logits.push(logits);
        let t1 = Instant::now();
        while out.tokens.len() < max_new_tokens {
            total += 1;
            let last = *out.tokens.last().unwrap_or(&0);
            let logits = self.step(&self.funcs.decode, &self.decode, &[last], total, &mut caches)?;
            out.tokens.push(argmax(&logits)?);
            out.logits.push(logits);
            out.decode_steps += 1;
        }
        if out.decode_steps > 0 {
            out.decode_ms_per_token = t1.elapsed().as_secs_f64() * 1e3 / out.decode_steps as f64;
        }
        Ok(out)
    }

    /// One call of `func` on `ids`; replaces `caches` with the returned ones and gives
    /// the last row of the logits.
    fn step(&self, func: &str, slots: &[Slot], ids: &[i64], total: i64, caches: &mut Vec<Value>) -> Result<Vec<f32>> {
        let mut args = Vec::with_capacity(slots.len());
        let mut next_cache = caches.iter();
        for s in slots {
            args.push(match s {
                Slot::Ids(dt) => Value::Tensor(ids_tensor(ids, *dt)?),
                Slot::TotalShape => Value::shape(&[total]),
                Slot::TotalPrim(dt) => Value::Prim(PrimValue::int(total, *dt)),
                Slot::Cache => next_cache.next().cloned().ok_or_else(|| {
                    EngineError::Invalid(format!(
                        "`{func}` takes more caches than `_initialize_effect` made ({})",
                        caches.len()
                    ))
                })?,
                Slot::Weight(w) => w.clone(),
            });
        }
        let result = self.loaded.run(func, &args)?;
        let (logits, new_caches) = match &result {
            Value::Tensor(t) => (t.clone(), None),
            Value::Tuple(fields) => {
                let logits = fields
                    .first()
                    .and_then(Value::as_tensor)
                    .ok_or_else(|| EngineError::Type(format!("`{func}` must return the logits first")))?;
                let rest = match fields.get(1) {
                    Some(Value::Tuple(c)) => Some(c.to_vec()),
                    Some(other) => Some(vec![other.clone()]),
                    None => None,
                };
                (logits.clone(), rest)
            }
            other => {
                return Err(EngineError::Type(format!(
                    "`{func}` returned {}, expected (logits, caches)",
                    other.describe()
                )))
            }
        };
        if let Some(c) = new_caches {
            *caches = c;
        }
        last_row(&logits)
    }
}

/// Greedy generation: [`Decoder::new`] with the default function names, then
/// [`Decoder::generate`].
pub fn generate(loaded: &Loaded, weights: &Params, prompt: &[i64], max_new_tokens: usize) -> Result<Generation> {
    Decoder::new(loaded, weights, DecoderFunctions::default())?.generate(prompt, max_new_tokens)
}

fn slots(loaded: &Loaded, func: &str, weights: &Params) -> Result<Vec<Slot>> {
    let f = match loaded.module().functions.get(&GlobalVar::new(func)) {
        Some(BaseFunc::Relax(f)) => f,
        _ => {
            return Err(EngineError::UnknownFunction(format!(
                "{func} (a decoder needs `prefill` and `decode` Relax functions)"
            )))
        }
    };
    let by_name: std::collections::HashMap<String, &Value> =
        weights.iter().map(|(n, v)| (printed_name(n), v)).collect();
    let mut out = Vec::with_capacity(f.params.len());
    let mut have_ids = false;
    for p in &f.params {
        if let Some(w) = by_name.get(p.name()) {
            out.push(Slot::Weight((*w).clone()));
            continue;
        }
        let slot = match p.struct_info() {
            Some(StructInfo::Tensor(t)) if !have_ids && (t.dtype.is_int() || t.dtype.is_uint()) => {
                have_ids = true;
                Slot::Ids(t.dtype)
            }
            Some(StructInfo::Shape(_)) => Slot::TotalShape,
            Some(StructInfo::Prim(pr)) if pr.dtype.is_int() => Slot::TotalPrim(pr.dtype),
            Some(StructInfo::Object) => Slot::Cache,
            _ => {
                return Err(EngineError::Invalid(format!(
                    "`{func}`: parameter `{}` is no weight, token ids, length or cache",
                    p.name()
                )))
            }
        };
        out.push(slot);
    }
    if !have_ids {
        return Err(EngineError::Invalid(format!(
            "`{func}` has no integer token-ids parameter"
        )));
    }
    Ok(out)
}

fn ids_tensor(ids: &[i64], dtype: DataType) -> Result<Tensor> {
    let mut bytes = Vec::with_capacity(ids.len() * dtype.bytes());
    for &id in ids {
        match dtype.bytes() {
            4 => bytes.extend_from_slice(&(id as i32).to_le_bytes()),
            8 => bytes.extend_from_slice(&id.to_le_bytes()),
            _ => {
                return Err(EngineError::Type(format!(
                    "token ids of dtype {dtype} are not supported"
                )))
            }
        }
    }
    Tensor::from_bytes(dtype, &[1, ids.len() as i64], bytes)
}

/// The last `vocab` values of the logits (the last position's), as f32.
fn last_row(t: &Tensor) -> Result<Vec<f32>> {
    let vocab = *t
        .shape()
        .last()
        .ok_or_else(|| EngineError::Type("the logits are a scalar".into()))? as usize;
    let all = t.to_f64_values()?;
    let start = all.len().saturating_sub(vocab);
    Ok(all[start..].iter().map(|&x| x as f32).collect())
}

/// The index of the largest value (the first one on ties, as numpy's argmax).
fn argmax(v: &[f32]) -> Result<i64> {
    let mut best: Option<(usize, f32)> = None;
    for (i, &x) in v.iter().enumerate() {
        if best.is_none_or(|(_, b)| x > b) {
            best = Some((i, x));
        }
    }
    best.map(|(i, _)| i as i64)
        .ok_or_else(|| EngineError::Type("empty logits".into()))
}
