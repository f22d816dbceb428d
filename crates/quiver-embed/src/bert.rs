//! The BERT encoder forward pass on the CPU, for sentence embeddings.
//!
//! A batch is processed without padding: the token rows of all its texts are stacked into one matrix
//! for every dense layer (so the weights are read once per batch), and attention runs per text and head
//! on strided views of that matrix. Weights come from a `model.safetensors` file (F32, F16 or BF16).

use std::collections::HashMap;
use std::path::Path;

use serde::Deserialize;

use crate::EmbedError;
use crate::matmul::{View, few_rows_linear, matmul};

/// Up to this many token rows, linear layers use the kernel that reads each weight once.
const FEW_ROWS: usize = 16;

/// The fields of a Hugging Face `config.json` the encoder needs.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct BertConfig {
    pub(crate) hidden_size: usize,
    pub(crate) num_hidden_layers: usize,
    pub(crate) num_attention_heads: usize,
    pub(crate) intermediate_size: usize,
    pub(crate) max_position_embeddings: usize,
    #[serde(default = "default_eps")]
    pub(crate) layer_norm_eps: f32,
    #[serde(default = "default_act")]
    hidden_act: String,
}

fn default_eps() -> f32 {
    1e-12
}

fn default_act() -> String {
    "gelu".into()
}

/// How token states become one sentence vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pooling {
    /// Mean of all token states (sentence-transformers models such as all-MiniLM-L6-v2).
    Mean,
    /// The state of the first (`[CLS]`) token (the BGE family).
    Cls,
}

struct Linear {
    /// `out x in`, row-major, as stored.
    weight: Vec<f32>,
    bias: Vec<f32>,
    inputs: usize,
    outputs: usize,
}

struct LayerNorm {
    weight: Vec<f32>,
    bias: Vec<f32>,
}

struct Layer {
    /// Query, key and value stacked into one `3H x H` projection.
    qkv: Linear,
    attention_out: Linear,
    attention_norm: LayerNorm,
    intermediate: Linear,
    output: Linear,
    output_norm: LayerNorm,
}

/// A loaded BERT encoder.
pub(crate) struct Bert {
    config: BertConfig,
    words: Vec<f32>,
    positions: Vec<f32>,
    token_types: Vec<f32>,
    embedding_norm: LayerNorm,
    layers: Vec<Layer>,
}

struct Tensors {
    bytes: Vec<u8>,
    start: usize,
    entries: HashMap<String, Entry>,
}

#[derive(Deserialize)]
struct Entry {
    dtype: String,
    shape: Vec<usize>,
    data_offsets: [usize; 2],
}

impl Tensors {
    fn open(path: &Path) -> Result<Self, EmbedError> {
        let bytes = std::fs::read(path).map_err(|e| EmbedError::io(path, &e))?;
        let bad = |why: &str| EmbedError::BadModel(format!("{}: {why}", path.display()));
        let header_len = bytes
            .get(..8)
            .and_then(|b| <[u8; 8]>::try_from(b).ok())
            .map(u64::from_le_bytes)
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(|| bad("too short for a safetensors file"))?;
        let header = bytes
            .get(8..8 + header_len)
            .ok_or_else(|| bad("header runs past the end"))?;
        let mut raw: HashMap<String, serde_json::Value> =
            serde_json::from_slice(header).map_err(|e| bad(&format!("header is not JSON: {e}")))?;
        raw.remove("__metadata__");
        let entries = raw
            .into_iter()
            .map(|(name, value)| {
                let entry: Entry = serde_json::from_value(value).map_err(|e| bad(&format!("{name}: {e}")))?;
                Ok((name, entry))
            })
            .collect::<Result<_, EmbedError>>()?;
        Ok(Tensors {
            bytes,
            start: 8 + header_len,
            entries,
        })
    }

    /// The header entry of tensor `name`, stored as `name` or `bert.name`.
    fn entry(&self, name: &str) -> Result<&Entry, EmbedError> {
        self.entries
            .get(name)
            .or_else(|| self.entries.get(&format!("bert.{name}")))
            .ok_or_else(|| EmbedError::BadModel(format!("the weights have no tensor `{name}`")))
    }

    /// The tensor `name` (or `bert.name`) as f32, checked to have `shape`.
    fn get(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>, EmbedError> {
        let entry = self.entry(name)?;
        if entry.shape != shape {
            return Err(EmbedError::BadModel(format!(
                "tensor `{name}` has shape {:?}; the config implies {shape:?}",
                entry.shape
            )));
        }
        let [from, to] = entry.data_offsets;
        let data = self
            .bytes
            .get(self.start + from..self.start + to)
            .ok_or_else(|| EmbedError::BadModel(format!("tensor `{name}` runs past the end of the file")))?;
        let count: usize = shape.iter().product();
        let values: Vec<f32> = match entry.dtype.as_str() {
            "F32" => data
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect(),
            "F16" => data
                .chunks_exact(2)
                .map(|b| f16_to_f32(u16::from_le_bytes([b[0], b[1]])))
                .collect(),
            "BF16" => data
                .chunks_exact(2)
                .map(|b| f32::from_bits(u32::from(u16::from_le_bytes([b[0], b[1]])) << 16))
                .collect(),
            other => {
                return Err(EmbedError::BadModel(format!(
                    "tensor `{name}` has dtype {other}; expected F32, F16 or BF16"
                )));
            }
        };
        if values.len() != count {
            return Err(EmbedError::BadModel(format!(
                "tensor `{name}` has the wrong byte length"
            )));
        }
        Ok(values)
    }

    fn linear(&self, name: &str, outputs: usize, inputs: usize) -> Result<Linear, EmbedError> {
        Ok(Linear {
            weight: self.get(&format!("{name}.weight"), &[outputs, inputs])?,
            bias: self.get(&format!("{name}.bias"), &[outputs])?,
            inputs,
            outputs,
        })
    }

    fn norm(&self, name: &str, size: usize) -> Result<LayerNorm, EmbedError> {
        Ok(LayerNorm {
            weight: self.get(&format!("{name}.weight"), &[size])?,
            bias: self.get(&format!("{name}.bias"), &[size])?,
        })
    }
}

fn f16_to_f32(bits: u16) -> f32 {
    let sign = u32::from(bits >> 15) << 31;
    let exponent = u32::from((bits >> 10) & 0x1f);
    let mantissa = u32::from(bits & 0x3ff);
    let magnitude = match (exponent, mantissa) {
        (0, 0) => 0,
        // Subnormal: mantissa * 2^-24, exact in f32.
        (0, _) => (mantissa as f32 * (-24f32).exp2()).to_bits(),
        (0x1f, 0) => 0x7f80_0000,
        (0x1f, _) => 0x7fc0_0000,
        _ => ((exponent + 112) << 23) | (mantissa << 13),
    };
    f32::from_bits(sign | magnitude)
}

impl Bert {
    /// Loads the encoder from a model directory's `config.json` and `model.safetensors`.
    pub(crate) fn load(dir: &Path) -> Result<Self, EmbedError> {
        let config_path = dir.join("config.json");
        let text = std::fs::read_to_string(&config_path).map_err(|e| EmbedError::io(&config_path, &e))?;
        let config: BertConfig = serde_json::from_str(&text)
            .map_err(|e| EmbedError::BadModel(format!("{}: {e}", config_path.display())))?;
        if config.hidden_act != "gelu" {
            return Err(EmbedError::BadModel(format!(
                "hidden_act `{}` is not supported; expected gelu",
                config.hidden_act
            )));
        }
        if config.num_attention_heads == 0 || !config.hidden_size.is_multiple_of(config.num_attention_heads) {
            return Err(EmbedError::BadModel(
                "hidden_size must be a multiple of num_attention_heads".into(),
            ));
        }
        let tensors = Tensors::open(&dir.join("model.safetensors"))?;
        let hidden = config.hidden_size;
        let words = tensors
            .entry("embeddings.word_embeddings.weight")?
            .shape
            .first()
            .copied()
            .unwrap_or(0);
        let mut layers = Vec::with_capacity(config.num_hidden_layers);
        for i in 0..config.num_hidden_layers {
            let prefix = format!("encoder.layer.{i}");
            let q = tensors.linear(&format!("{prefix}.attention.self.query"), hidden, hidden)?;
            let k = tensors.linear(&format!("{prefix}.attention.self.key"), hidden, hidden)?;
            let v = tensors.linear(&format!("{prefix}.attention.self.value"), hidden, hidden)?;
            let qkv = Linear {
                weight: [q.weight, k.weight, v.weight].concat(),
                bias: [q.bias, k.bias, v.bias].concat(),
                inputs: hidden,
                outputs: 3 * hidden,
            };
            layers.push(Layer {
                qkv,
                attention_out: tensors.linear(&format!("{prefix}.attention.output.dense"), hidden, hidden)?,
                attention_norm: tensors.norm(&format!("{prefix}.attention.output.LayerNorm"), hidden)?,
                intermediate: tensors.linear(
                    &format!("{prefix}.intermediate.dense"),
                    config.intermediate_size,
                    hidden,
                )?,
                output: tensors.linear(
                    &format!("{prefix}.output.dense"),
                    hidden,
                    config.intermediate_size,
                )?,
                output_norm: tensors.norm(&format!("{prefix}.output.LayerNorm"), hidden)?,
            });
        }
        Ok(Bert {
            words: tensors.get("embeddings.word_embeddings.weight", &[words, hidden])?,
            positions: tensors.get(
                "embeddings.position_embeddings.weight",
                &[config.max_position_embeddings, hidden],
            )?,
            token_types: tensors.get_token_types(hidden)?,
            embedding_norm: tensors.norm("embeddings.LayerNorm", hidden)?,
            layers,
            config,
        })
    }

    /// The length of the token states and sentence vectors.
    pub(crate) fn hidden_size(&self) -> usize {
        self.config.hidden_size
    }

    /// The most tokens one text may have (the position table's length).
    pub(crate) fn max_tokens(&self) -> usize {
        self.config.max_position_embeddings
    }

    /// Sentence vectors (pooled, L2-normalised) for already tokenised texts.
    pub(crate) fn embed(&self, texts: &[Vec<u32>], pooling: Pooling) -> Result<Vec<Vec<f32>>, EmbedError> {
        let hidden = self.config.hidden_size;
        let vocab = self.words.len() / hidden;
        let lengths: Vec<usize> = texts.iter().map(Vec::len).collect();
        let total: usize = lengths.iter().sum();
        let mut states = vec![0.0f32; total * hidden];
        let mut row = 0;
        for ids in texts {
            if ids.len() > self.max_tokens() {
                return Err(EmbedError::BadModel(format!(
                    "{} tokens exceed the model's {} positions",
                    ids.len(),
                    self.max_tokens()
                )));
            }
            for (position, &id) in ids.iter().enumerate() {
                let id = id as usize;
                if id >= vocab {
                    return Err(EmbedError::BadModel(format!(
                        "token id {id} is outside the vocabulary"
                    )));
                }
                let out = &mut states[row * hidden..(row + 1) * hidden];
                let word = &self.words[id * hidden..(id + 1) * hidden];
                let pos = &self.positions[position * hidden..(position + 1) * hidden];
                for (((o, w), p), t) in out.iter_mut().zip(word).zip(pos).zip(&self.token_types[..hidden]) {
                    *o = w + p + t;
                }
                row += 1;
            }
        }
        layer_norm(&mut states, &self.embedding_norm, self.config.layer_norm_eps);
        let mut scratch = Scratch::default();
        for layer in &self.layers {
            self.layer(layer, &mut states, &lengths, &mut scratch);
        }
        let mut out = Vec::with_capacity(texts.len());
        let mut start = 0;
        for &len in &lengths {
            let mut vector = vec![0.0f32; hidden];
            match pooling {
                Pooling::Cls => {
                    if len > 0 {
                        vector.copy_from_slice(&states[start * hidden..(start + 1) * hidden]);
                    }
                }
                Pooling::Mean => {
                    for r in start..start + len {
                        for (v, s) in vector.iter_mut().zip(&states[r * hidden..(r + 1) * hidden]) {
                            *v += s;
                        }
                    }
                    let n = len.max(1) as f32;
                    vector.iter_mut().for_each(|v| *v /= n);
                }
            }
            let norm = vector.iter().map(|v| v * v).sum::<f32>().sqrt().max(1e-12);
            vector.iter_mut().for_each(|v| *v /= norm);
            out.push(vector);
            start += len;
        }
        Ok(out)
    }

    fn layer(&self, layer: &Layer, states: &mut [f32], lengths: &[usize], scratch: &mut Scratch) {
        let hidden = self.config.hidden_size;
        let heads = self.config.num_attention_heads;
        let head = hidden / heads;
        let rows = states.len() / hidden;
        let scale = 1.0 / (head as f32).sqrt();

        linear(&layer.qkv, states, rows, &mut scratch.qkv, None);
        scratch.context.clear();
        scratch.context.resize(rows * hidden, 0.0);
        let mut start = 0;
        for &len in lengths {
            scratch.scores.clear();
            scratch.scores.resize(len * len, 0.0);
            for h in 0..heads {
                let view = |part: usize| View {
                    data: &scratch.qkv,
                    offset: start * 3 * hidden + part * hidden + h * head,
                    rows: len,
                    cols: head,
                    row_stride: 3 * hidden,
                    col_stride: 1,
                };
                matmul(&mut scratch.scores, 0, len, false, view(0), view(1).t(), scale);
                for scores in scratch.scores.chunks_exact_mut(len) {
                    softmax(scores);
                }
                matmul(
                    &mut scratch.context,
                    start * hidden + h * head,
                    hidden,
                    false,
                    View::rows(&scratch.scores, len, len),
                    view(2),
                    1.0,
                );
            }
            start += len;
        }
        // Attention output + residual, normalised, back into `states`.
        linear(
            &layer.attention_out,
            &scratch.context,
            rows,
            &mut scratch.projected,
            Some(states),
        );
        layer_norm(
            &mut scratch.projected,
            &layer.attention_norm,
            self.config.layer_norm_eps,
        );
        states.copy_from_slice(&scratch.projected);

        linear(&layer.intermediate, states, rows, &mut scratch.intermediate, None);
        scratch.intermediate.iter_mut().for_each(|x| *x = gelu(*x));
        linear(
            &layer.output,
            &scratch.intermediate,
            rows,
            &mut scratch.projected,
            Some(states),
        );
        layer_norm(
            &mut scratch.projected,
            &layer.output_norm,
            self.config.layer_norm_eps,
        );
        states.copy_from_slice(&scratch.projected);
    }
}

impl Tensors {
    /// Row 0 of the token-type table (every text is a single segment).
    fn get_token_types(&self, hidden: usize) -> Result<Vec<f32>, EmbedError> {
        let shape = self
            .entry("embeddings.token_type_embeddings.weight")?
            .shape
            .clone();
        self.get("embeddings.token_type_embeddings.weight", &shape)
            .map(|all| all[..hidden.min(all.len())].to_vec())
    }
}

#[derive(Default)]
struct Scratch {
    qkv: Vec<f32>,
    context: Vec<f32>,
    scores: Vec<f32>,
    projected: Vec<f32>,
    intermediate: Vec<f32>,
}

/// `out = input * W^T + bias (+ residual)`.
fn linear(layer: &Linear, input: &[f32], rows: usize, out: &mut Vec<f32>, residual: Option<&[f32]>) {
    out.clear();
    out.reserve(rows * layer.outputs);
    for r in 0..rows {
        match residual {
            Some(residual) => out.extend(
                layer
                    .bias
                    .iter()
                    .zip(&residual[r * layer.outputs..(r + 1) * layer.outputs])
                    .map(|(b, x)| b + x),
            ),
            None => out.extend_from_slice(&layer.bias),
        }
    }
    if rows <= FEW_ROWS && few_rows_linear(out, input, &layer.weight, rows, layer.inputs, layer.outputs) {
        return;
    }
    matmul(
        out,
        0,
        layer.outputs,
        true,
        View::rows(input, rows, layer.inputs),
        View::rows(&layer.weight, layer.outputs, layer.inputs).t(),
        1.0,
    );
}

fn layer_norm(states: &mut [f32], norm: &LayerNorm, eps: f32) {
    let size = norm.weight.len();
    for row in states.chunks_exact_mut(size) {
        let mean = row.iter().sum::<f32>() / size as f32;
        let variance = row.iter().map(|x| (x - mean) * (x - mean)).sum::<f32>() / size as f32;
        let inv = 1.0 / (variance + eps).sqrt();
        for ((x, w), b) in row.iter_mut().zip(&norm.weight).zip(&norm.bias) {
            *x = (*x - mean) * inv * w + b;
        }
    }
}

fn softmax(row: &mut [f32]) {
    let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut sum = 0.0;
    for x in row.iter_mut() {
        *x = (*x - max).exp();
        sum += *x;
    }
    row.iter_mut().for_each(|x| *x /= sum);
}

/// The exact (erf) GELU.
fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2))
}

/// erf with absolute error below 2e-7 (Numerical Recipes' Chebyshev fit of erfc, in f32).
fn erf(x: f32) -> f32 {
    const C: [f32; 10] = [
        -1.265_512_2,
        1.000_023_7,
        0.374_091_96,
        0.096_784_18,
        -0.186_288_06,
        0.278_868_07,
        -1.135_204,
        1.488_515_9,
        -0.822_152_2,
        0.170_872_77,
    ];
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = C.iter().rev().fold(0.0, |acc, c| acc * t + c);
    let erfc = t * (-z * z + poly).exp();
    if x >= 0.0 { 1.0 - erfc } else { erfc - 1.0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erf_matches_known_values() {
        for (x, want) in [
            (0.0f32, 0.0f32),
            (0.5, 0.520_499_9),
            (1.0, 0.842_700_8),
            (-2.0, -0.995_322_3),
            (3.5, 0.999_999_3),
        ] {
            assert!((erf(x) - want).abs() < 3e-7, "erf({x}) = {} want {want}", erf(x));
        }
    }

    #[test]
    fn half_precision_values_widen_exactly() {
        assert_eq!(f16_to_f32(0x3c00), 1.0);
        assert_eq!(f16_to_f32(0xc000), -2.0);
        assert_eq!(f16_to_f32(0x3555), 0.333_251_95);
        assert_eq!(f16_to_f32(0x0001), 5.960_464_5e-8);
        assert!(f16_to_f32(0x7c00).is_infinite());
    }

    #[test]
    fn softmax_rows_sum_to_one_and_keep_order() {
        let mut row = [1.0, 3.0, 2.0];
        softmax(&mut row);
        assert!((row.iter().sum::<f32>() - 1.0).abs() < 1e-6);
        assert!(row[1] > row[2] && row[2] > row[0]);
    }
}
