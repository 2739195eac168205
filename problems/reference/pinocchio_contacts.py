"""Pinocchio's own rigid-contact solver set up on a model's point contacts: the reference that
the contact benchmark and the contact tests compare our kernels with (no code shared with
them: Pinocchio's ``constraintDynamics``, ``impulseDynamics`` and their derivatives)."""

from __future__ import annotations

import pinocchio as pin


def point_contacts(pm, frames):
    """(models, datas, data, settings) for Pinocchio's constraint and impulse dynamics with a
    point contact (CONTACT_3D, LOCAL_WORLD_ALIGNED, as our ``Contact3D``) at each of ``frames``
    of the Pinocchio model ``pm``; exact settings (accuracy 1e-14, no proximal term)."""
    models, datas = pin.StdVec_RigidConstraintModel(), pin.StdVec_RigidConstraintData()
    for f in frames:
        fr = pm.frames[pm.getFrameId(f)]
        cm = pin.RigidConstraintModel(pin.ContactType.CONTACT_3D, pm, fr.parentJoint,
                                      fr.placement, pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)
        models.append(cm)
        datas.append(cm.createData())
    data = pm.createData()
    pin.initConstraintDynamics(pm, data, models, datas)
    return models, datas, data, pin.ProximalSettings(1e-14, 0.0, 1)
